import numpy as np, clreduce, pyopencl as cl, warnings
warnings.simplefilter("ignore")
devs=[d for p in cl.get_platforms() for d in p.get_devices()]
F=3.0e38
cases={
 'pm_max': np.array([F,-F,1e38,2e38],np.float32),
 'pm_max2': np.array([-F,F],np.float32),
 'x0_out': np.array([-F]+[F]*99,np.float32),
 'allbig': np.array([F]*100,np.float32),
 'h_pm': np.array([65504,-65504,65504,1],np.float16),
 'h_all': np.array([65504]*1000,np.float16),
 'inf_in': np.array([np.inf,1,2],np.float32),
 'ninf_in': np.array([np.inf,-np.inf,2],np.float32),
 'big_sum': np.array([F,F,-F,-F,1e30],np.float32),
}
for d in devs:
  c=cl.Context([d]); q=cl.CommandQueue(c)
  print('==', d.name[:30])
  for k,x in cases.items():
    x2=x[None,:]
    out=[]
    for name,f,g in [('sum',clreduce.sum,np.sum),('mean',clreduce.mean,np.mean),('var',clreduce.var,np.var),('std',clreduce.std,np.std)]:
      a=f(x2,axis=-1,queue=q)[0]; b=g(x2,axis=-1)[0]
      ok = (np.isnan(a) and np.isnan(b)) or a==b or abs(float(a)-float(b))<=1e-5*abs(float(b))
      if not ok: out.append(f'{name}: {a} vs np {b}')
    m,v=clreduce.moments(x2,axis=-1,queue=q)
    bm=np.mean(x2.astype(np.float64),-1).astype(x.dtype)[0]; bv=np.var(x2,axis=-1)[0]
    if not ((np.isnan(m[0]) and np.isnan(bm)) or m[0]==bm or abs(float(m[0])-float(bm))<=1e-5*abs(float(bm))): out.append(f'moments mean {m[0]} vs {bm} (np32 {np.mean(x2)})')
    if not ((np.isnan(v[0]) and np.isnan(bv)) or v[0]==bv or abs(float(v[0])-float(bv))<=1e-5*abs(float(bv))): out.append(f'moments var {v[0]} vs {bv}')
    print(' ', k, '; '.join(out) or 'ok')
