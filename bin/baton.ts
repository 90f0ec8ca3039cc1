#!/usr/bin/env node
/**
 * `baton`: the command line for a Baton scheduler (tasks, topologies, timers, workers, API keys).
 * `baton --help` lists every command; README's "Read on" says how to put it on the PATH.
 */
import { runCli } from './cli/main';

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err);
    process.exitCode = 3;
  },
);
