import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bech32m } from '@scure/base';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ArcodeError, arCompress, arDecompress } from '../../src/codec/arcode.ts';
import { decodeInvoice, encodeInvoice, signInvoice } from '../../src/invoice/codec.ts';
import { InvoiceError } from '../../src/invoice/errors.ts';
import { decodeRawInvoiceData, encodeRawInvoiceData } from '../../src/invoice/molecule.ts';
import { scriptToMolecule } from '../../src/invoice/script.ts';
import type { Invoice, InvoiceAttr } from '../../src/invoice/types.ts';
import { fuzzRuns } from '../helpers/fuzz-runs.ts';
import * as V from './vectors.ts';

const VECTORS = [V.V1, V.V2, V.V3, V.V4];
const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';

/** Decoding may succeed or fail, but only ever with an InvoiceError. */
function decodesOrTypedError(s: unknown): void {
  try {
    decodeInvoice(s);
  } catch (e) {
    if (!(e instanceof InvoiceError)) throw e;
  }
}

describe('decoder under hostile input', () => {
  it('random strings only give typed errors', () => {
    fc.assert(fc.property(fc.string({ maxLength: 600 }), decodesOrTypedError), { numRuns: fuzzRuns(2000) });
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(...('fibtd1' + CHARSET + 'B!~ ')), maxLength: 600 }),
        (s) => decodesOrTypedError(s),
      ),
      { numRuns: fuzzRuns(2000) },
    );
  });

  it('single-character mutations of the vectors only give typed errors', () => {
    const mutation = fc.record({
      v: fc.nat(VECTORS.length - 1),
      at: fc.nat(),
      op: fc.constantFrom('replace', 'delete', 'insert'),
      ch: fc.constantFrom(...(CHARSET + 'fibt1BIO! \u00e9')),
    });
    fc.assert(
      fc.property(mutation, ({ v, at, op, ch }) => {
        const s = VECTORS[v];
        const i = at % s.length;
        const mutated =
          op === 'replace'
            ? s.slice(0, i) + ch + s.slice(i + 1)
            : op === 'delete'
              ? s.slice(0, i) + s.slice(i + 1)
              : s.slice(0, i) + ch + s.slice(i);
        decodesOrTypedError(mutated);
      }),
      { numRuns: fuzzRuns(3000) },
    );
  });

  it('mutated data words under a valid checksum only give typed errors', () => {
    // Re-encoding with a fresh checksum drives the input past bech32 into decompression, molecule
    // and signature checks.
    const parsed = VECTORS.map((s) => bech32m.decode(s as `${string}1${string}`, false));
    fc.assert(
      fc.property(fc.nat(VECTORS.length - 1), fc.nat(), fc.nat(31), fc.boolean(), (v, at, value, cut) => {
        const { prefix, words } = parsed[v];
        const w = [...words];
        const i = at % w.length;
        if (cut) w.length = i;
        else w[i] = value;
        decodesOrTypedError(bech32m.encode(prefix, w, false));
      }),
      { numRuns: fuzzRuns(3000) },
    );
  });

  it('random compressed payloads under a valid checksum only give typed errors', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 400 }), fc.boolean(), (bytes, signed) => {
        const words = [signed ? 1 : 0, ...bech32m.toWords(bytes)];
        while (words.length < 105) words.push(0);
        decodesOrTypedError(bech32m.encode('fibd', words, false));
      }),
      { numRuns: fuzzRuns(1500) },
    );
  });

  it('valid arcode around random molecule bytes only gives typed errors', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (raw) => {
        try {
          decodeRawInvoiceData(raw);
        } catch (e) {
          if (!(e instanceof InvoiceError)) throw e;
        }
        const words = [0, ...bech32m.toWords(arCompress(raw))];
        while (words.length < 105) words.push(0);
        decodesOrTypedError(bech32m.encode('fibd', words, false));
      }),
      { numRuns: fuzzRuns(1500) },
    );
  });

  it('arcode decompression of garbage ends (EOF or ArcodeError), bounded in size', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (data) => {
        try {
          expect(arDecompress(data, { maxOutput: 4096 }).length).toBeLessThanOrEqual(4096);
        } catch (e) {
          if (!(e instanceof ArcodeError)) throw e;
        }
      }),
      { numRuns: fuzzRuns(2000) },
    );
  });
});

// ---------------------------------------------------------------- generated invoices

const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 });
const secretKey = fc
  .uint8Array({ minLength: 32, maxLength: 32 })
  .filter((k) => secp256k1.utils.isValidSecretKey(k));

const attr: fc.Arbitrary<InvoiceAttr> = fc.oneof(
  u64.map((seconds) => ({ kind: 'ExpiryTime' as const, seconds })),
  fc.string({ maxLength: 80 }).map((value) => ({ kind: 'Description' as const, value })),
  u64.map((value) => ({ kind: 'FinalHtlcTimeout' as const, value })),
  u64.map((value) => ({ kind: 'FinalHtlcMinimumExpiryDelta' as const, value })),
  fc.string({ maxLength: 60 }).map((value) => ({ kind: 'FallbackAddr' as const, value })),
  fc.uint8Array({ maxLength: 4 }).map((bytes) => ({ kind: 'Feature' as const, bytes })),
  fc
    .record({
      code_hash: bytes32.map((b) => Buffer.from(b).toString('hex')),
      hash_type: fc.constantFrom('data', 'type', 'data1', 'data2' as const),
      args: fc.uint8Array({ maxLength: 40 }).map((b) => '0x' + Buffer.from(b).toString('hex')),
    })
    .map((s) => ({ kind: 'UdtScript' as const, script: scriptToMolecule(s) })),
  fc.constantFrom('ckb_hash', 'sha256' as const).map((value) => ({ kind: 'HashAlgorithm' as const, value })),
  bytes32.map((value) => ({ kind: 'PaymentSecret' as const, value })),
);

const invoiceArb = fc.record({
  currency: fc.constantFrom('Fibb', 'Fibt', 'Fibd' as const),
  amount: fc.option(fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }), { nil: undefined }),
  timestamp: fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
  paymentHash: bytes32,
  attrs: fc.array(attr, { maxLength: 8 }),
  signer: fc.option(secretKey, { nil: undefined }),
  withPayee: fc.boolean(),
});

describe('encode ∘ decode', () => {
  it('is the identity on generated invoices, signed or not', () => {
    fc.assert(
      fc.property(invoiceArb, (g) => {
        const attrs = [...g.attrs];
        if (g.signer && g.withPayee) {
          attrs.push({ kind: 'PayeePublicKey', pubkey: secp256k1.getPublicKey(g.signer, true) });
        }
        let inv: Invoice = {
          currency: g.currency,
          data: { timestamp: g.timestamp, paymentHash: g.paymentHash, attrs },
        };
        if (g.amount !== undefined) inv.amount = g.amount;
        if (g.signer) inv = signInvoice(inv, g.signer);
        const s = encodeInvoice(inv);
        const dataWords = bech32m.decode(s as `${string}1${string}`, false).words.length;
        if (dataWords < 104) {
          // The reference refuses data parts shorter than a signature, even for unsigned invoices
          // (so its encoder can write small unsigned invoices that its decoder rejects); so do we.
          expect(() => decodeInvoice(s)).toThrow('Too short data part');
          return;
        }
        const back = decodeInvoice(s);
        expect(back).toEqual(inv);
        expect(encodeInvoice(back)).toBe(s);
      }),
      { numRuns: fuzzRuns(300) },
    );
  });

  it('arcode decompress ∘ compress is the identity on random bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), (data) => {
        expect(arDecompress(arCompress(data))).toEqual(data);
      }),
      { numRuns: fuzzRuns(300) },
    );
  });

  it('molecule decode ∘ encode is the identity on generated attribute lists', () => {
    fc.assert(
      fc.property(invoiceArb, (g) => {
        const data = { timestamp: g.timestamp, paymentHash: g.paymentHash, attrs: g.attrs };
        expect(decodeRawInvoiceData(encodeRawInvoiceData(data))).toEqual(data);
      }),
      { numRuns: fuzzRuns(300) },
    );
  });
});
