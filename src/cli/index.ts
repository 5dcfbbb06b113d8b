// What other parts of the checkout (bench/) use of the command line: the commands' specs.
export { BENCH, SPECS, SUBCOMMANDS } from './specs/index.ts';
