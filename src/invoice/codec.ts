/**
 * The Fiber invoice string (`docs/reference/fiber-internals.md` §1), byte-exact with the
 * reference node: bech32m(hrp, [signed flag] ++ u5(arcode(molecule RawInvoiceData)) ++ [104 u5 of
 * the recoverable signature]). The hrp is the currency prefix followed by the amount in decimal.
 *
 * Decoding follows the reference's order of checks and error texts (bech32 0.9, then data length,
 * then hrp, then decompression, molecule, signature), and — like the reference — verifies the
 * signature over the invoice as re-encoded from its decoded fields.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bech32m } from '@scure/base';
import { ArcodeError, arCompress, arDecompress, equalBytes } from '../codec/index.ts';
import { ckbHash, sha256 } from '../crypto/index.ts';
import { bech32Error, InvoiceError } from './errors.ts';
import { decodeRawInvoiceData, encodeRawInvoiceData } from './molecule.ts';
import {
  CURRENCY_PREFIX,
  type Currency,
  findAttr,
  type HashAlgorithm,
  type Invoice,
  type InvoiceData,
} from './types.ts';

export const SIGNATURE_U5_SIZE = 104;
/** Longest invoice string accepted (the reference has no limit; real invoices are < 2000 chars). */
export const MAX_INVOICE_LENGTH = 8192;
/**
 * Largest molecule accepted after decompression: arcode can expand hostile input enormously (a
 * 500-character string can claim megabytes). Real invoices are well under 2 KiB; at this cap the
 * slowest hostile string costs about 10 ms to reject.
 */
export const MAX_RAW_DATA_LENGTH = 16384;

const U128_MAX = (1n << 128n) - 1n;
const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const CHARSET_REV = new Int8Array(128).fill(-1);
for (let i = 0; i < CHARSET.length; i++) {
  CHARSET_REV[CHARSET.charCodeAt(i)] = i;
  CHARSET_REV[CHARSET.toUpperCase().charCodeAt(i)] = i;
}

// ---------------------------------------------------------------- hrp

export function hrpOf(currency: Currency, amount?: bigint): string {
  return CURRENCY_PREFIX[currency] + (amount === undefined ? '' : amount.toString(10));
}

/** Parses `^(fibb|fibt|fibd)[0-9]*$` with the reference's error texts. */
export function parseHrp(hrp: string): { currency: Currency; amount?: bigint } {
  const prefix = hrp.slice(0, 4);
  const currency = (Object.keys(CURRENCY_PREFIX) as Currency[]).find((c) => CURRENCY_PREFIX[c] === prefix);
  if (!currency) throw new InvoiceError('MalformedHrp', `Parsing failed with malformed HRP: ${hrp}`);
  const rest = hrp.slice(4);
  const digits = /^[0-9]*/.exec(rest)![0];
  if (digits.length < rest.length) {
    throw new InvoiceError(
      'MalformedHrp',
      `Parsing failed with malformed HRP: ${hrp}, unexpected ending \`${rest.slice(digits.length)}\``,
    );
  }
  if (digits === '') return { currency };
  const amount = BigInt(digits);
  if (amount > U128_MAX) {
    throw new InvoiceError('ParseAmount', 'Failed to parse amount: number too large to fit in target type');
  }
  return { currency, amount };
}

// ---------------------------------------------------------------- 5/8-bit regrouping

/** bytes → u5 words, zero-padded (bech32 `ToBase32`). */
export function toWords(bytes: Uint8Array): number[] {
  return bech32m.toWords(bytes);
}

/** u5 words → bytes, rejecting padding of 5+ bits or non-zero padding (bech32 0.9 `FromBase32`). */
export function fromWords(words: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(Math.floor((words.length * 5) / 8));
  let acc = 0;
  let bits = 0;
  let o = 0;
  for (let i = 0; i < words.length; i++) {
    acc = ((acc << 5) | words[i]) & 0xfff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  if (bits >= 5 || ((acc << (8 - bits)) & 0xff) !== 0) throw bech32Error('invalid padding');
  return out;
}

// ---------------------------------------------------------------- encoding

function dataWords(data: InvoiceData): number[] {
  return toWords(arCompress(encodeRawInvoiceData(data)));
}

/** Signature bytes (r‖s‖recovery id) → the 104 u5 values of the string and of the RPC JSON. */
export function signatureWords(signature: Uint8Array): number[] {
  return toWords(signature);
}

export function encodeInvoice(inv: Invoice): string {
  const words = [inv.signature ? 1 : 0, ...dataWords(inv.data)];
  if (inv.signature) words.push(...signatureWords(inv.signature));
  return bech32m.encode(hrpOf(inv.currency, inv.amount), words, false);
}

/**
 * The signed message: SHA-256 of hrp ‖ the data words regrouped to bytes after lightning-style
 * padding (for byte-aligned data: the compressed bytes plus one zero byte when their length is
 * not a multiple of 5).
 */
export function signingHash(inv: Invoice): Uint8Array {
  return signingHashOf(hrpOf(inv.currency, inv.amount), dataWords(inv.data));
}

function signingHashOf(hrp: string, words: number[]): Uint8Array {
  const padded = words.slice();
  const overhang = (padded.length * 5) % 8;
  if (overhang > 0) {
    padded.push(0);
    if (overhang < 3) padded.push(0);
  }
  return sha256(new TextEncoder().encode(hrp), fromWords(padded));
}

/** Signs with the node key (RFC 6979 nonces and low-S, as libsecp256k1: the same bytes as fnn). */
export function signInvoice(inv: Invoice, secretKey: Uint8Array): Invoice {
  const rec = secp256k1.sign(signingHash(inv), secretKey, { prehash: false, format: 'recovered' });
  const signature = new Uint8Array(65);
  signature.set(rec.subarray(1, 65), 0);
  signature[64] = rec[0];
  return { ...inv, signature };
}

// ---------------------------------------------------------------- signature checks

/** The key that produced the signature (33 bytes, compressed), or an InvoiceError. */
export function recoverPayee(inv: Invoice): Uint8Array {
  if (!inv.signature) throw new InvoiceError('InvalidSignature', 'Invalid signature');
  return recoverWith(inv.signature, signingHash(inv));
}

function recoverWith(signature: Uint8Array, hash: Uint8Array): Uint8Array {
  // A recovery id above 3 fails the reference's signature parsing, reported as InvalidSignature.
  const recid = signature[64];
  if (recid > 3) throw new InvoiceError('InvalidSignature', 'Invalid signature');
  try {
    const sig = secp256k1.Signature.fromBytes(signature.subarray(0, 64), 'compact').addRecoveryBit(recid);
    return sig.recoverPublicKey(hash).toBytes(true);
  } catch {
    throw new InvoiceError('InvalidSignature', 'Invalid signature');
  }
}

/**
 * The reference's `check_signature`: recovery must succeed, and the signature must verify (low-S
 * only, as libsecp256k1) against the PayeePublicKey attribute if present, else the recovered key.
 */
export function checkSignature(inv: Invoice): void {
  if (!inv.signature) return;
  const hash = signingHash(inv);
  const recovered = recoverWith(inv.signature, hash);
  const payee = findAttr(inv, 'PayeePublicKey')?.pubkey;
  const compact = inv.signature.subarray(0, 64);
  // A low-S signature always verifies under the key it recovers to, so the common case needs no
  // second curve operation; otherwise verify in full (a payee key may still verify with the
  // other R parity, which the reference accepts).
  if (
    !secp256k1.Signature.fromBytes(compact, 'compact').hasHighS() &&
    (!payee || equalBytes(payee, recovered))
  ) {
    return;
  }
  let ok = false;
  try {
    ok = secp256k1.verify(compact, hash, payee ?? recovered, { prehash: false, lowS: true });
  } catch {
    ok = false;
  }
  if (!ok) throw new InvoiceError('InvalidSignature', 'Invalid signature');
}

/** The payee of a signed invoice: its PayeePublicKey attribute, else the recovered key. */
export function payeeOf(inv: Invoice): Uint8Array | undefined {
  const attr = findAttr(inv, 'PayeePublicKey');
  if (attr) return attr.pubkey;
  return inv.signature ? recoverPayee(inv) : undefined;
}

// ---------------------------------------------------------------- decoding

interface Bech32Parts {
  hrp: string;
  words: Uint8Array;
}

/** bech32 0.9 `decode` with its checks, order and messages; only bech32m checksums pass. */
function splitBech32(s: string): Bech32Parts {
  const sep = s.lastIndexOf('1');
  if (sep < 0) throw bech32Error('missing human-readable separator, "1"');
  const rawHrp = s.slice(0, sep);
  const rawData = s.slice(sep + 1);
  // The hrp is checked byte by byte (UTF-8), as bech32 0.9 does; a bad byte shows as its Latin-1 char.
  const hrpBytes = new TextEncoder().encode(rawHrp);
  if (hrpBytes.length === 0 || hrpBytes.length > 83) throw bech32Error('invalid length');
  let lower = false;
  let upper = false;
  for (const c of hrpBytes) {
    if (c < 33 || c > 126) throw bech32Error(`invalid character (code=${String.fromCharCode(c)})`);
    if (c >= 97 && c <= 122) lower = true;
    else if (c >= 65 && c <= 90) upper = true;
    if (lower && upper) throw bech32Error('mixed-case strings not allowed');
  }
  const words = new Uint8Array(rawData.length);
  let n = 0;
  for (const ch of rawData) {
    const c = ch.codePointAt(0)!;
    if (c > 127) throw bech32Error(`invalid character (code=${ch})`);
    if (c >= 97 && c <= 122) {
      if (upper) throw bech32Error('mixed-case strings not allowed');
      lower = true;
    } else if (c >= 65 && c <= 90) {
      if (lower) throw bech32Error('mixed-case strings not allowed');
      upper = true;
    }
    const v = CHARSET_REV[c];
    if (v < 0) throw bech32Error(`invalid character (code=${ch})`);
    words[n++] = v;
  }
  if (n < 6) throw bech32Error('invalid length');
  const lowered = s.toLowerCase();
  try {
    // The library verifies the bech32m checksum (the plain bech32 variant fails, as in the reference).
    bech32m.decode(lowered as `${string}1${string}`, false);
  } catch {
    throw bech32Error('invalid checksum');
  }
  return { hrp: rawHrp.toLowerCase(), words: words.subarray(0, n - 6) };
}

export interface DecodeOptions {
  /**
   * Skip the signature check (about 1.5 ms of curve work). Only for strings this node produced
   * and stored itself; anything from outside must be verified.
   */
  trusted?: boolean;
}

/** Parses an invoice string; every malformed input gives an InvoiceError (never anything else). */
export function decodeInvoice(s: unknown, opts: DecodeOptions = {}): Invoice {
  if (typeof s !== 'string') throw bech32Error('invalid length');
  if (s.length > MAX_INVOICE_LENGTH) {
    throw new InvoiceError(
      'TooLong',
      `Invoice string is too long: ${s.length} > ${MAX_INVOICE_LENGTH} characters`,
    );
  }
  const { hrp, words } = splitBech32(s);
  if (words.length < SIGNATURE_U5_SIZE) throw new InvoiceError('TooShortDataPart', 'Too short data part');
  const { currency, amount } = parseHrp(hrp);
  const signed = words[0] === 1;
  const dataEnd = signed ? words.length - SIGNATURE_U5_SIZE : words.length;
  const compressed = fromWords(words.subarray(1, dataEnd));
  let raw: Uint8Array;
  try {
    raw = arDecompress(compressed, { maxOutput: MAX_RAW_DATA_LENGTH });
  } catch (e) {
    if (e instanceof ArcodeError)
      throw new InvoiceError('Decompress', `Failed to decompress invoice data: ${e.message}`);
    throw e;
  }
  const data = decodeRawInvoiceData(raw);
  const inv: Invoice = { currency, data };
  if (amount !== undefined) inv.amount = amount;
  if (signed) inv.signature = fromWords(words.subarray(dataEnd));
  if (!opts.trusted) checkSignature(inv);
  return inv;
}

// ---------------------------------------------------------------- payment hash

export function hashPreimage(preimage: Uint8Array, algorithm: HashAlgorithm): Uint8Array {
  return algorithm === 'sha256' ? sha256(preimage) : ckbHash(preimage);
}
