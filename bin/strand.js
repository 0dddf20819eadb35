#!/usr/bin/env node
// Entry point of the `strand` command. Strand runs from its TypeScript sources through tsx's
// loader (no build step: `npm ci && npm start` is all a user needs). The Node.js version is
// checked first, with a clear message, before anything that needs a recent Node is loaded.
// `strand rpc` is plain JavaScript and runs before tsx loads: one call then costs a Node
// start-up, not the whole node.
import { nodeVersionProblem, requiredNode } from './check-node.js';

const problem = nodeVersionProblem(process.versions.node, requiredNode());
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
if (process.argv[2] === 'rpc') {
  const { rpcCommand } = await import('../src/cli/rpc-command.js');
  process.exitCode = await rpcCommand(process.argv.slice(3));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  const { main } = await import('../src/cli/main.ts');
  await main(process.argv);
}
