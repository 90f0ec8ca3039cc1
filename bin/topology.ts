/**
 * `npm run topology -- <command>`: the same as `baton topologies <command>` (apply -f, export,
 * list, run, watch, runs), kept for the scripts that call it.
 */
import { runCli } from './cli/main';

void runCli(['topologies', ...process.argv.slice(2)]).then((code) => {
  process.exitCode = code;
});
