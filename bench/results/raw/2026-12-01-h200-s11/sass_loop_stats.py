#!/usr/bin/env python3
"""Session 11 analysis helper (not part of the build): compares the steady loop of every
decode_gemm_kernel instantiation in two SASS dumps (cuobjdump -sass of sm90_decode_gemm.cu built
for sm_90a): instructions and register moves per HMMA in the loop with the most HMMAs, and the
kernel's total instruction count.
Usage: sass_loop_stats.py before.sass after.sass"""
import re,sys,collections
def stats(path):
    txt=open(path).read()
    out={}
    for f in re.split(r'\n\s+Function : ',txt)[1:]:
        name=f.split('\n')[0]
        m=re.search(r'decode_gemm_kernelILi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)E',name)
        if not m: continue
        lines=[l for l in f.split('\n') if re.match(r'\s+/\*[0-9a-f]{4}\*/',l)]
        addr=lambda l:int(re.match(r'\s+/\*([0-9a-f]{4})\*/',l).group(1),16)
        best=None
        for l in lines:
            mm=re.search(r'BRA (0x[0-9a-f]+)',l)
            if mm:
                tgt=int(mm.group(1),16); src=addr(l)
                if tgt<src:
                    body=[x for x in lines if tgt<=addr(x)<=src]
                    h=sum('HMMA' in x for x in body)
                    if best is None or h>best[0]: best=(h,body)
        h,body=best
        mv=sum(bool(re.search(r'\b(IMAD\.MOV|MOV)\b',x)) for x in body)
        out[tuple(map(int,m.groups()))]=(h,len(body),mv,len(lines))
    return out
a=stats(sys.argv[1]); b=stats(sys.argv[2])
for k in sorted(a):
    ha,na,ma,ta=a[k]; hb,nb,mb,tb=b[k]
    print(k,'instr per HMMA %.2f -> %.2f'%(na/ha, nb/hb),' moves per HMMA %.2f -> %.2f'%(ma/ha, mb/hb),' total',ta,'->',tb)
