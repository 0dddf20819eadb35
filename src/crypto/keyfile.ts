/**
 * Key files, byte-compatible with fnn:
 * - `fiber/sk`: the node identity, 32 raw bytes, written with mode 0400.
 * - `ckb/key`: the wallet key, encrypted: version byte 0x00 ‖ 16-byte salt ‖ 12-byte nonce ‖
 *   AES-256-GCM(32-byte key) ‖ 16-byte tag = 77 bytes; AES key = scrypt(password, salt,
 *   N=2^17, r=8, p=1). A file holding the key as 64 plain hex characters is encrypted in place
 *   (atomically) the first time it is loaded with a password.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { isValidSecretKey } from './identity.ts';

export class KeyFileError extends Error {}

export const PASSWORD_ENV = 'FIBER_SECRET_KEY_PASSWORD';

const VERSION = 0x00;
const SALT_LEN = 16;
const NONCE_LEN = 12;
const TAG_LEN = 16;
const ENCRYPTED_LEN = 1 + SALT_LEN + NONCE_LEN + 32 + TAG_LEN;
const SCRYPT = { N: 1 << 17, r: 8, p: 1, maxmem: 256 * 1024 * 1024 };

function newSecretKey(): Uint8Array {
  for (;;) {
    const sk = new Uint8Array(crypto.randomBytes(32));
    if (isValidSecretKey(sk)) return sk;
  }
}

/** Writes `data` to `file` atomically (temp file + fsync + rename) with the given mode. */
function writeAtomic(file: string, data: Uint8Array, mode: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  const fd = fs.openSync(tmp, 'w', mode);
  try {
    fs.writeSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.chmodSync(tmp, mode);
  fs.renameSync(tmp, file);
}

/** Loads `fiber/sk`, creating it (mode 0400) when missing. */
export function loadOrCreateNodeKey(file: string): Uint8Array {
  if (!fs.existsSync(file)) {
    const sk = newSecretKey();
    writeAtomic(file, sk, 0o400);
    return sk;
  }
  const data = new Uint8Array(fs.readFileSync(file));
  if (data.length !== 32 || !isValidSecretKey(data)) {
    throw new KeyFileError(`${file}: expected 32 raw bytes of a valid secp256k1 secret key`);
  }
  return data;
}

export function encryptWalletKey(secretKey: Uint8Array, password: string): Uint8Array {
  const salt = crypto.randomBytes(SALT_LEN);
  const nonce = crypto.randomBytes(NONCE_LEN);
  const key = crypto.scryptSync(password, salt, 32, SCRYPT);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, nonce);
  const body = Buffer.concat([cipher.update(secretKey), cipher.final()]);
  return new Uint8Array(Buffer.concat([Buffer.from([VERSION]), salt, nonce, body, cipher.getAuthTag()]));
}

export function decryptWalletKey(data: Uint8Array, password: string, file = 'ckb/key'): Uint8Array {
  if (data.length !== ENCRYPTED_LEN || data[0] !== VERSION) {
    throw new KeyFileError(`${file}: not an encrypted key file (expected ${ENCRYPTED_LEN} bytes, version 0)`);
  }
  const salt = data.subarray(1, 1 + SALT_LEN);
  const nonce = data.subarray(1 + SALT_LEN, 1 + SALT_LEN + NONCE_LEN);
  const body = data.subarray(1 + SALT_LEN + NONCE_LEN, ENCRYPTED_LEN - TAG_LEN);
  const tag = data.subarray(ENCRYPTED_LEN - TAG_LEN);
  const key = crypto.scryptSync(password, salt, 32, SCRYPT);
  const decipher = crypto.createDecipheriv('aes-256-gcm', key, nonce);
  decipher.setAuthTag(tag);
  try {
    const sk = new Uint8Array(Buffer.concat([decipher.update(body), decipher.final()]));
    if (!isValidSecretKey(sk)) throw new KeyFileError(`${file}: decrypted key is not a valid secp256k1 key`);
    return sk;
  } catch (e) {
    if (e instanceof KeyFileError) throw e;
    throw new KeyFileError(`${file}: wrong password in ${PASSWORD_ENV} (or the file is corrupt)`);
  }
}

/** A plain key file: 64 hex characters (fnn rejects a `0x` prefix), optional trailing newline. */
function parsePlainKey(data: Uint8Array, file: string): Uint8Array | undefined {
  const text = Buffer.from(data).toString('latin1').trim();
  if (/^0x[0-9a-fA-F]{64}$/.test(text)) {
    throw new KeyFileError(`${file}: a plain key must be 64 hex characters without the 0x prefix`);
  }
  if (!/^[0-9a-fA-F]{64}$/.test(text)) return undefined;
  const sk = new Uint8Array(Buffer.from(text, 'hex'));
  if (!isValidSecretKey(sk)) throw new KeyFileError(`${file}: not a valid secp256k1 secret key`);
  return sk;
}

export interface WalletKeyOptions {
  password: string | undefined;
  /** Create a new key when the file does not exist (default true). */
  create?: boolean;
}

/**
 * Loads the wallet key from `ckb/key`: decrypts it, or encrypts a plain hex key in place, or
 * creates a new encrypted key. Without a password nothing is read or written.
 */
export function loadWalletKey(file: string, opts: WalletKeyOptions): Uint8Array {
  const { password } = opts;
  if (password === undefined || password === '') {
    throw new KeyFileError(`${PASSWORD_ENV} is not set: it is needed to decrypt or create ${file}`);
  }
  if (!fs.existsSync(file)) {
    if (opts.create === false) throw new KeyFileError(`${file} does not exist`);
    const sk = newSecretKey();
    writeAtomic(file, encryptWalletKey(sk, password), 0o600);
    return sk;
  }
  const data = new Uint8Array(fs.readFileSync(file));
  const plain = parsePlainKey(data, file);
  if (plain) {
    writeAtomic(file, encryptWalletKey(plain, password), 0o600);
    return plain;
  }
  return decryptWalletKey(data, password, file);
}

/** Writes a given wallet key encrypted (import); refuses to overwrite an existing file. */
export function writeWalletKey(file: string, secretKey: Uint8Array, password: string): void {
  if (fs.existsSync(file))
    throw new KeyFileError(`${file} already exists; refusing to overwrite a wallet key`);
  if (!isValidSecretKey(secretKey)) throw new KeyFileError('not a valid secp256k1 secret key');
  writeAtomic(file, encryptWalletKey(secretKey, password), 0o600);
}
