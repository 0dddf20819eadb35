import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runStrand, tempDir } from '../helpers/node-process.ts';

const NODE1 = path.join(import.meta.dirname, '../fixtures/fiber-test-nodes/1');

describe('strand keys', () => {
  it('imports a wallet key encrypted and shows the identity of the reference test node', async () => {
    const dir = tempDir('strand-keys-');
    fs.mkdirSync(path.join(dir, 'fiber'));
    fs.copyFileSync(path.join(NODE1, 'fiber/sk'), path.join(dir, 'fiber/sk'));
    const env = { FIBER_SECRET_KEY_PASSWORD: 'pw' };
    const r = await runStrand(
      ['keys', 'import', '-d', dir, '--wallet-key', path.join(NODE1, 'ckb/plain_key')],
      env,
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.pubkey).toBe('02a64b8993f33b2ebd37a4de1c9441f491291a4e779da8e519bcfb7c1f3f56c9c0');
    expect(out.peer_id).toBe('QmbvRjJHAQDmj3cgnUBGQ5zVnGxUKwb2qJygwNs2wk41h8');
    expect(out.wallet_address).toBe(fs.readFileSync(path.join(NODE1, 'ckb/wallet'), 'utf8').trim());
    expect(fs.readFileSync(path.join(dir, 'ckb/key')).length).toBe(77);
    const again = await runStrand(
      ['keys', 'import', '-d', dir, '--wallet-key', path.join(NODE1, 'ckb/plain_key')],
      env,
    );
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('refusing to overwrite');
    const wrong = await runStrand(['keys', 'show', '-d', dir], { FIBER_SECRET_KEY_PASSWORD: 'other' });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('wrong password');
  });

  it('creates new keys once and shows the same identity afterwards', async () => {
    const dir = tempDir('strand-keys-');
    const env = { FIBER_SECRET_KEY_PASSWORD: 'pw' };
    const first = await runStrand(['keys', 'new', '-d', dir], env);
    expect(first.code).toBe(0);
    const shown = await runStrand(['keys', 'show', '-d', dir], env);
    expect(JSON.parse(shown.stdout)).toEqual(JSON.parse(first.stdout));
    expect(JSON.parse(first.stdout).wallet_address).toMatch(/^ckt1/);
  });
});
