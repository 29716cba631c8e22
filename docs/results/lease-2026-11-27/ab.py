import json,collections,statistics,sys
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    j=json.loads(l)
    if 'system' not in j: continue
    p=j.get('params',{})
    d[(j['workload'],j['system'],j['domain'],tuple(sorted((k,v) for k,v in p.items() if k!='seed')),j['build'])].append(j['ns_per_op'])
keys=sorted({k[:-1] for k in d}, key=str)
for k in keys:
    o=d.get(k+('old',),[]); n=d.get(k+('new',),[])
    if o and n:
        print(k, 'old %.0f new %.0f ns  new/old %.3f'%(statistics.median(o),statistics.median(n),statistics.median(n)/statistics.median(o)), [round(x) for x in o],[round(x) for x in n])
