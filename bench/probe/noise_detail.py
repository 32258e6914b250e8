import json,sys
for f in sys.argv[1:]:
    v=json.load(open(f))
    print(f.split('/')[-1], 'threads', (v.get('hello') or {}).get('threads'))
    for p in v['points']:
        if not p.get('samples_per_s'): continue
        print(f"  {p['batch']:>5} mean {p['samples_per_s']:>9.0f} med {p['batch']*1000/p['step_ms_p50']:>9.0f} cv {p['step_cv']:.2f} n {p['timed_steps']:>4} warm {p['warmup_steps']:>3} timed {p.get('timed_s') or 0:.2f}s until {p.get('timed_until')} first {1000*(p.get('first_step_s') or 0):.1f}ms p95/p50 {p['step_ms_p95']/p['step_ms_p50']:.2f}")
