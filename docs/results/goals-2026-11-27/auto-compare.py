import json,sys,collections,math
rows=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
pts=collections.defaultdict(dict)
for r in rows:
    if 'ns_per_op' not in r: continue
    p=r['params']; key=(r['build'],r['workload'],r['domain'],r['backend'],p.get('k'),p.get('slot'),p.get('write_pct'))
    pts[key][r['system']]=r['ns_per_op']
res=collections.defaultdict(list)
for key,sr in pts.items():
    fx=[sr[s] for s in ('pmtx-undo','pmtx-redo','pmtx-redo-async') if s in sr]
    if 'pmtx-auto' in sr and fx: res[key[0]].append((sr['pmtx-auto']/min(fx),key[1:]))
for b,v in sorted(res.items()):
    rs=[x[0] for x in v]; gm=math.exp(sum(math.log(x) for x in rs)/len(rs))
    print(b, 'points',len(rs),'geo %.3f'%gm,'over1.05',sum(x>1.05 for x in rs),'over1.10',sum(x>1.10 for x in rs),'worst %.2f'%max(rs))
    for x in sorted(v,reverse=True)[:int(sys.argv[2]) if len(sys.argv)>2 else 6]: print('   %.3f'%x[0], x[1])
