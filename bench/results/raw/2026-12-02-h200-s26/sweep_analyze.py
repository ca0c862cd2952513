import json,sys,collections
rows=collections.defaultdict(dict); rule_kernel={}
for l in open(sys.argv[1]):
    if not l.startswith('{'): continue
    d=json.loads(l)
    if not d.get('ok'): continue
    key=(d['n'],d['k'],d['m'])
    rows[key][d['shape']]=d['time_us']
    if d['shape']=='rule':
        k=d['kernel']; 
        if 'wgmma kernel' in k[:40]: rule_kernel[key]='wgmma'
        else:
            import re
            m=re.search(r'(\d+) CTAs of (\d+)x(\d+) warps.*?(\d) weight tile',k)
            rule_kernel[key]=f"{m.group(2)}:{m.group(3)}:{m.group(4)}" if m else '?'
miss=0
for key in sorted(rows, key=lambda x:(x[2],x[0],x[1])):
    r=rows[key]; rule=r.get('rule'); 
    forced={s:t for s,t in r.items() if s!='rule'}
    best=min(forced,key=forced.get)
    ratio=rule/forced[best]
    flag='  <-- MISS' if ratio>1.05 else ''
    if ratio>1.05: miss+=1
    print(f"{key[0]:>6}x{key[1]:<6} M={key[2]:<3} rule {rule:7.2f} ({rule_kernel.get(key)}) best {best:>7} {forced[best]:7.2f}  rule/best {ratio:.3f}{flag}")
print('misses >5%:',miss,'of',len(rows))
