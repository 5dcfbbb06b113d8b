// The simulation's public surface: plan a seeded sale and run it over HTTP.
export type { SimTarget } from './sim.client.ts';
export { parseMix, planSim, SEED_SHAPE, type SimShape } from './sim.plan.ts';
export { Simulation } from './sim.run.ts';
export type { Progress, SimReport } from './sim.support.ts';
export { runSeed002, type Seed002Report } from './sim.seed002.ts';
