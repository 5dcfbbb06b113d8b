import { buildDist } from '../../scripts/build-dist.ts';

// The cluster suite's global setup: one compile, so every flashpay process it starts (API
// processes, the worker, `cluster up` itself) boots the compiled copy (bin/dist.js).
export async function setup(): Promise<void> {
  await buildDist();
}
