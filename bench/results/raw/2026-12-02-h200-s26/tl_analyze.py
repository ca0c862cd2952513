import gzip,sys,statistics as st
def load(f):
    rows=[list(map(int,l.split()[1:])) for l in gzip.open(f,'rt')]
    rows.sort(key=lambda r:r[2])
    launches=[];cur=[]
    for r in rows:
        if cur and r[2]-cur[0][2]>3000: launches.append(cur);cur=[]
        cur.append(r)
    launches.append(cur)
    return launches
for f in sys.argv[1:]:
    L=load(f)
    n=max(len(l) for l in L)
    L=[l for l in L if len(l)==n][5:]
    # per launch: relative to min entry
    names=['entry_lo','entry_hi','wait_lo','wait_hi','first_lo','first_hi','loop_lo','loop_hi','sync','end']
    agg={k:[] for k in names}
    spans=[]
    for l in L:
        t0=min(r[2] for r in l)
        for i,k in enumerate(names):
            vals=[r[2+i]-t0 for r in l]
            agg[k].append((min(vals),st.median(vals),max(vals)))
        spans.append(max(r[11] for r in l)-t0)
    print(f, 'launches',len(L),'ctas sampled',n,'span median %.2f us'%(st.median(spans)/1000))
    for k in names:
        a=agg[k]
        print('  %-9s min %6.2f  med %6.2f  max %6.2f us'%(k, st.median(x[0] for x in a)/1000, st.median(x[1] for x in a)/1000, st.median(x[2] for x in a)/1000))
