#!/usr/bin/env node
// Entry point of the `strand` command. Strand runs from its TypeScript sources through tsx's
// loader (no build step: `npm ci && npm start` is all a user needs).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
