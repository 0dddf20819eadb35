/**
 * The `strand` command's Node.js check (`bin/check-node.js`): below `engines.node` of
 * package.json it exits 1 with a message naming both versions, before loading anything else.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeVersionProblem } from '../../bin/check-node.js';
import { STRAND_BIN } from '../helpers/node-process.ts';

const engines = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8'))
  .engines.node as string;

/** Runs `strand --help` as if Node.js were `version` (process.versions replaced before the bin). */
function strandAs(version: string) {
  const pretend = `Object.defineProperty(process,"versions",{value:{...process.versions,node:"${version}"}});`;
  return spawnSync(process.execPath, ['--import', `data:text/javascript,${pretend}`, STRAND_BIN, '--help'], {
    encoding: 'utf8',
  });
}

describe('the Node.js version check', { timeout: 60_000 }, () => {
  it('refuses an older Node with a message naming the needed and the running version', () => {
    const r = strandAs('20.11.1');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('strand needs Node.js >= 20.19.0');
    expect(r.stderr).toContain('this is Node.js 20.11.1');
    expect(r.stdout).toBe('');
  });

  it('runs on the version it names', () => {
    const r = strandAs(engines.replace('>=', ''));
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Usage: strand');
  });

  it('compares each part as a number', () => {
    expect(nodeVersionProblem('20.19.0', '>=20.19.0')).toBeUndefined();
    expect(nodeVersionProblem('v22.1.0', '>=20.19.0')).toBeUndefined();
    expect(nodeVersionProblem('20.100.0', '>=20.19.0')).toBeUndefined();
    expect(nodeVersionProblem('20.18.9', '>=20.19.0')).toMatch(/needs Node\.js >= 20\.19\.0/);
    expect(nodeVersionProblem('18.20.0', '>=20.19.0')).toMatch(/this is Node\.js 18\.20\.0/);
  });
});
