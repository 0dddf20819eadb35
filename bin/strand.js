#!/usr/bin/env node
// Entry point of the `strand` command. Strand runs from its TypeScript sources through tsx's
// loader (no build step: `npm ci && npm start` is all a user needs). The Node.js version is
// checked first, with a clear message, before anything that needs a recent Node is loaded.
import { nodeVersionProblem, requiredNode } from './check-node.js';

const problem = nodeVersionProblem(process.versions.node, requiredNode());
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
const { register } = await import('tsx/esm/api');
register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
