import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  decryptWalletKey,
  encryptWalletKey,
  KeyFileError,
  loadOrCreateNodeKey,
  loadWalletKey,
  writeWalletKey,
} from '../../src/crypto/keyfile.ts';

const VECTORS = path.join(import.meta.dirname, '../fixtures/fiber-test-nodes');
const PASSWORDS: Record<string, string> = {
  '1': 'password1',
  '2': 'password2',
  '3': 'password3',
  bootnode: 'password0',
};

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-keys-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('wallet key file (fnn layout)', () => {
  for (const [node, password] of Object.entries(PASSWORDS)) {
    it(`decrypts test node ${node}'s ckb/key to its plain key`, () => {
      const data = new Uint8Array(fs.readFileSync(path.join(VECTORS, node, 'ckb/key')));
      const plain = fs.readFileSync(path.join(VECTORS, node, 'ckb/plain_key'), 'utf8').trim();
      expect(Buffer.from(decryptWalletKey(data, password)).toString('hex')).toBe(plain);
    });
  }

  it('refuses a wrong password and leaves the file untouched', () => {
    const file = path.join(dir, 'key');
    fs.copyFileSync(path.join(VECTORS, '1/ckb/key'), file);
    const before = fs.readFileSync(file);
    expect(() => loadWalletKey(file, { password: 'password2' })).toThrow(/wrong password/);
    expect(() => loadWalletKey(file, { password: undefined })).toThrow(
      /FIBER_SECRET_KEY_PASSWORD is not set/,
    );
    expect(fs.readFileSync(file)).toEqual(before);
  });

  it('encrypts a plain hex key in place, readable by the same password', () => {
    const file = path.join(dir, 'key');
    const plain = fs.readFileSync(path.join(VECTORS, '2/ckb/plain_key'), 'utf8').trim();
    fs.writeFileSync(file, `${plain}\n`);
    const sk = loadWalletKey(file, { password: 'pw' });
    expect(Buffer.from(sk).toString('hex')).toBe(plain);
    const stored = new Uint8Array(fs.readFileSync(file));
    expect(stored.length).toBe(77);
    expect(stored[0]).toBe(0);
    expect(Buffer.from(decryptWalletKey(stored, 'pw')).toString('hex')).toBe(plain);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it('rejects a 0x-prefixed plain key without touching it (as fnn does)', () => {
    const file = path.join(dir, 'key');
    fs.writeFileSync(file, `0x${'11'.repeat(32)}`);
    expect(() => loadWalletKey(file, { password: 'pw' })).toThrow(/without the 0x prefix/);
    expect(fs.readFileSync(file, 'utf8')).toBe(`0x${'11'.repeat(32)}`);
  });

  it('detects tampering through the GCM tag', () => {
    const enc = encryptWalletKey(new Uint8Array(32).fill(7), 'pw');
    enc[40] ^= 1;
    expect(() => decryptWalletKey(enc, 'pw')).toThrow(KeyFileError);
    expect(() => decryptWalletKey(enc.subarray(0, 60), 'pw')).toThrow(/not an encrypted key file/);
  });

  it('creates a new key when missing and refuses to overwrite on import', () => {
    const file = path.join(dir, 'ckb', 'key');
    const sk = loadWalletKey(file, { password: 'pw' });
    expect(loadWalletKey(file, { password: 'pw' })).toEqual(sk);
    expect(() => writeWalletKey(file, new Uint8Array(32).fill(3), 'pw')).toThrow(/already exists/);
  });
});

describe('node key file', () => {
  it('creates 32 raw bytes with mode 0400 and reads them back', () => {
    const file = path.join(dir, 'fiber', 'sk');
    const sk = loadOrCreateNodeKey(file);
    expect(sk.length).toBe(32);
    expect(fs.statSync(file).mode & 0o777).toBe(0o400);
    expect(loadOrCreateNodeKey(file)).toEqual(sk);
  });

  it('reads the reference test node key byte for byte', () => {
    const sk = loadOrCreateNodeKey(path.join(VECTORS, '1/fiber/sk'));
    expect(Buffer.from(sk)).toEqual(fs.readFileSync(path.join(VECTORS, '1/fiber/sk')));
  });

  it('refuses a file of the wrong size', () => {
    const file = path.join(dir, 'sk');
    fs.writeFileSync(file, Buffer.alloc(31, 1));
    expect(() => loadOrCreateNodeKey(file)).toThrow(/32 raw bytes/);
  });
});
