import json,sys,glob,statistics as st,collections
d=sys.argv[1]
rows=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(d+'/*.jsonl')):
    name=f.split('/')[-1][:-6]; wl,b=name.rsplit('-',1)
    recs=[json.loads(l) for l in open(f) if l.startswith('{')]
    # pair twin with pmdk by order within the same param
    by=collections.defaultdict(list)
    for r in recs:
        key=tuple(sorted(r['params'].items()))
        by[(key,r['system'])].append(r)
    for (key,sys_),lst in by.items():
        if sys_!='pmtx-twin': continue
        pm=by[(key,'pmdk')]
        for t,p in zip(lst,pm):
            rows[(wl,dict(key).get('k',dict(key).get('entry')))][b].append((t['ops_per_s']/p['ops_per_s'],t['ops_per_s'],t['barriers_per_op']))
for k in sorted(rows):
    s='%-8s %6s'%k
    for b in sorted(rows[k]):
        v=rows[k][b]
        s+='  b%s: %6.2fx %9.0f/s bar %.2f'%(b,st.median(x[0] for x in v),st.median(x[1] for x in v),st.median(x[2] for x in v))
    print(s)
