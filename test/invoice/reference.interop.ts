/**
 * Invoices against the reference node itself (fiber-js 0.8.1 in headless Chromium): its invoices
 * decode in Strand and re-encode byte for byte (signature included: both sign with RFC 6979 and
 * low-S), and it parses Strand's invoices to the same JSON.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bech32m } from '@scure/base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../../src/codec/errors.ts';
import { bytesToHex } from '../../src/codec/hex.ts';
import { ckbHash } from '../../src/crypto/hash.ts';
import { publicKeyOf } from '../../src/crypto/identity.ts';
import { decodeInvoice, encodeInvoice, recoverPayee, signInvoice } from '../../src/invoice/codec.ts';
import { InvoiceError } from '../../src/invoice/errors.ts';
import { invoiceToJson } from '../../src/invoice/json.ts';
import { createInvoiceService } from '../../src/invoice/service.ts';
import { invoiceSchema } from '../../src/invoice/store.ts';
import { stringify } from '../../src/rpc/dispatch.ts';
import { invoiceMethods } from '../../src/rpc/modules/invoice.ts';
import { openDatabase } from '../../src/store/db.ts';
import { type ReferenceNode, referenceAvailable, startReferenceNode } from '../interop/reference-node.ts';
import * as V from './vectors.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures');
const read = (p: string) => new Uint8Array(fs.readFileSync(path.join(FIXTURES, p)));
const NODE_SK = read('fiber-test-nodes/2/fiber/sk');

/** Deterministic PRNG (mulberry32) so that a failing input can be reproduced. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The `message` of the reference's error object, as its Debug text shows it. */
function refMessage(text: string): string {
  const m = /message: "((?:[^"\\]|\\.)*)"/.exec(text);
  return m ? m[1]!.replace(/\\(.)/g, '$1') : text;
}

async function refError(ref: ReferenceNode, method: string, params: unknown[]): Promise<string> {
  try {
    await ref.call(method, params);
  } catch (e) {
    return String((e as Error).message ?? e);
  }
  throw new Error(`${method} unexpectedly succeeded`);
}

describe.skipIf(!referenceAvailable())('invoices interchange with the reference node', () => {
  let ref: ReferenceNode;

  beforeAll(async () => {
    ref = await startReferenceNode({
      fiberSecretKey: NODE_SK,
      ckbSecretKey: Buffer.from(
        fs.readFileSync(path.join(FIXTURES, 'fiber-test-nodes/2/ckb/plain_key'), 'utf8').trim(),
        'hex',
      ),
      chainSpec: fs.readFileSync(path.join(FIXTURES, 'genesis/dev.toml'), 'utf8'),
      ckbRpcUrl: 'http://127.0.0.1:9/',
    });
  });

  afterAll(async () => {
    await ref?.close();
  });

  it("decodes the reference's invoices and re-creates them byte for byte with the same key", async () => {
    const cases = [
      {
        amount: '0x5f5e100',
        currency: 'Fibd',
        description: 'interop',
        expiry: '0xe10',
        hash_algorithm: 'sha256',
      },
      {
        amount: '0x0',
        currency: 'Fibd',
        payment_hash: '0x' + '3c'.repeat(32),
        final_expiry_delta: '0x5265c00',
      },
      {
        amount: '0x1',
        currency: 'Fibd',
        allow_mpp: true,
        allow_trampoline_routing: true,
        fallback_address: 'ckt1qzda0cr08m85hc8jlnfp3zer7xulejywt49kt2rr0vthywaa50xwsqgx7g4s3',
        udt_type_script: {
          code_hash: '0x1142755a044bf2ee358cba9f2da187ce928c91cd4dc8692ded0337efa677d21a',
          hash_type: 'type',
          args: '0x878fcc6f1f08d48e87bb1c3b3d5083f23f8a39c5d5c764f253b55b998526439b',
        },
      },
    ];
    for (const params of cases) {
      const made = await ref.call('new_invoice', [params]);
      const inv = decodeInvoice(made.invoice_address);
      expect(encodeInvoice(inv)).toBe(made.invoice_address);
      expect(invoiceToJson(inv, 'v08')).toEqual(made.invoice);
      expect(recoverPayee(inv)).toEqual(publicKeyOf(NODE_SK));
      // Same fields, same key: Strand's signature is the reference's, bit for bit.
      const resigned = signInvoice({ ...inv, signature: undefined }, NODE_SK);
      expect(bytesToHex(resigned.signature!)).toBe(bytesToHex(inv.signature!));
    }
  });

  it("parses Strand's invoices to the same fields", async () => {
    const dir = fs.mkdtempSync(path.join(import.meta.dirname, '.tmp-interop-'));
    const db = openDatabase(path.join(dir, 'strand.db'), [invoiceSchema]);
    try {
      const svc = createInvoiceService({
        db,
        nodeSecretKey: read('fiber-test-nodes/1/fiber/sk'),
        currency: 'Fibd',
      });
      for (const req of [
        { amount: 123n, currency: 'Fibd' as const, description: 'from Strand', expiry: 60n },
        { amount: 1n, currency: 'Fibd' as const, allowMpp: true, hashAlgorithm: 'sha256' as const },
      ]) {
        const { invoiceAddress, invoice } = svc.newInvoice(req);
        const parsed = await ref.call('parse_invoice', [{ invoice: invoiceAddress }]);
        expect(parsed.invoice).toEqual(invoiceToJson(invoice, 'v08'));
      }
    } finally {
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives the same result or the same error text on mutated invoices (differential)', async () => {
    const rand = prng(Number(process.env.INVOICE_DIFF_SEED ?? 20260411));
    const count = Number(process.env.INVOICE_DIFF_COUNT ?? 300);
    // Bases in the v0.5+ layout (the v0.4-layout V1, V2, V4 are refused by fnn v0.8 outright).
    const sk = read('fiber-test-nodes/3/fiber/sk');
    const made = [
      { kind: 'Description' as const, value: 'différentiel' },
      { kind: 'FallbackAddr' as const, value: 'ckt1qzda0cr08m85hc8jlnfp3zer7xulejywt49kt2rr0vthywaa50xwsq' },
      { kind: 'Feature' as const, bytes: Uint8Array.of(0x28) },
      { kind: 'PaymentSecret' as const, value: new Uint8Array(32).fill(9) },
      {
        kind: 'UdtScript' as const,
        script:
          decodeInvoice(V.V2).data.attrs[2]!.kind === 'UdtScript'
            ? (decodeInvoice(V.V2).data.attrs[2] as { script: Uint8Array }).script
            : new Uint8Array(),
      },
      { kind: 'PayeePublicKey' as const, pubkey: publicKeyOf(sk) },
    ];
    const strandMade = encodeInvoice(
      signInvoice(
        {
          currency: 'Fibt',
          amount: 5n,
          data: { timestamp: 1n << 41n, paymentHash: new Uint8Array(32).fill(1), attrs: made },
        },
        sk,
      ),
    );
    const base = [V.V3, strandMade].map((v) => bech32m.decode(v as `${string}1${string}`, false));
    const inputs: string[] = [
      'hello',
      'fibt1qqqqqq',
      'fibx1' + 'q'.repeat(120),
      V.V4_TWIN,
      V.V3.toUpperCase(),
    ];
    for (let i = 0; inputs.length < count; i++) {
      const { prefix, words } = base[i % base.length]!;
      const w = [...words];
      const edits = 1 + Math.floor(rand() * 2);
      for (let j = 0; j < edits; j++) w[Math.floor(rand() * w.length)] = Math.floor(rand() * 32);
      if (rand() < 0.15) w.length = Math.floor(rand() * w.length);
      const hrp =
        rand() < 0.1
          ? ['fibt', 'fibd0', 'fibb18446744073709551616', 'fibtt'][Math.floor(rand() * 4)]!
          : prefix;
      inputs.push(bech32m.encode(hrp, w, false));
      if (rand() < 0.2) {
        // a character-level edit of a valid string (checksum, case, separator, charset errors)
        const src = [V.V3, strandMade][i % 2]!;
        const at = Math.floor(rand() * src.length);
        const ch = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l1bBIO!é '[Math.floor(rand() * 41)]!;
        inputs.push(src.slice(0, at) + ch + src.slice(at + (rand() < 0.5 ? 1 : 0)));
      }
    }
    let compared = 0;
    for (const input of inputs) {
      let ours: { ok: unknown } | { error: string };
      try {
        const inv = decodeInvoice(input);
        // Strand also reads the v0.4 ExpiryTime layout, which fnn v0.8 refuses.
        if (inv.data.attrs.some((a) => a.kind === 'ExpiryTime' && a.legacyNanos !== undefined)) continue;
        ours = { ok: invoiceToJson(inv, 'v08') };
      } catch (e) {
        if (!(e instanceof InvoiceError)) throw e;
        // Where fnn panics (its `expect`s), Strand answers with its own typed error: not comparable.
        if (['Decompress', 'InvalidUtf8', 'InvalidPubkey', 'TooLong'].includes(e.kind)) continue;
        if (/ExpiryTimeReader total size doesn't match, expect 8, actual 16/.test(e.message)) continue;
        ours = { error: e.message };
      }
      let theirs: { ok: unknown } | { error: string };
      try {
        // The wasm bridge turns None into undefined; fnn's HTTP JSON writes null, as Strand does.
        const invoice = (await ref.call('parse_invoice', [{ invoice: input }])).invoice;
        theirs = { ok: JSON.parse(JSON.stringify(invoice, (_k, v) => (v === undefined ? null : v))) };
      } catch (e) {
        theirs = { error: refMessage(String((e as Error).message ?? e)) };
      }
      expect({ input, ...theirs }).toEqual({ input, ...ours });
      compared++;
    }
    expect(compared).toBeGreaterThan(count / 3);
    expect(ref.errors).toEqual([]);
  });

  it('new_invoice: same refusals (text and data) and same invoices as fnn for the same params', async () => {
    const dir = fs.mkdtempSync(path.join(import.meta.dirname, '.tmp-interop-'));
    const db = openDatabase(path.join(dir, 'strand.db'), [invoiceSchema]);
    try {
      const svc = createInvoiceService({ db, nodeSecretKey: NODE_SK, currency: 'Fibd' });
      const spec = invoiceMethods(svc, { attrStyle: 'v08' }).find((m) => m.name === 'new_invoice')!;
      const strand = async (params: object) => {
        try {
          return { ok: await spec.handler(spec.params!.parse(params), { transport: 'http' }) };
        } catch (e) {
          if (!(e instanceof DomainError)) throw e;
          return { error: e.message, data: JSON.parse(stringify(e.data)) };
        }
      };
      const reference = async (params: object) => {
        try {
          return { ok: await ref.call('new_invoice', [params]) };
        } catch (e) {
          const text = String((e as Error).message ?? e);
          const data = /data: Some\(RawValue\((.*)\)\) \}$/.exec(text)?.[1];
          return { error: refMessage(text), data: data ? JSON.parse(data) : null };
        }
      };
      const preimage = '0x' + '6d'.repeat(32);
      const cases: object[] = [
        { amount: '0x1', currency: 'Fibt' },
        { amount: '0x1', currency: 'Fibb', description: 'x' },
        { amount: '0x1', currency: 'Fibd', payment_preimage: preimage, payment_hash: '0x' + '11'.repeat(32) },
        { amount: '0x1', currency: 'Fibd', description: 'é'.repeat(320) },
        { amount: '0x1', currency: 'Fibd', final_expiry_delta: '0x927bff' },
        { amount: '0x1', currency: 'Fibd', final_expiry_delta: '0x48190801' },
        { amount: '0x2', currency: 'Fibd', payment_hash: '0x' + '22'.repeat(32) },
        { amount: '0x2', currency: 'Fibd', payment_hash: '0x' + '22'.repeat(32) },
        {
          amount: '0x3',
          currency: 'Fibd',
          payment_preimage: preimage,
          hash_algorithm: 'sha256',
          expiry: '0x0',
        },
        {
          amount: '0x4',
          currency: 'Fibd',
          allow_mpp: true,
          allow_trampoline_routing: false,
          description: 'mpp',
        },
      ];
      // Strand refuses what fnn signs: a malformed fallback address, an expiry past the end of
      // time (docs/rpc-limits.md).
      const stricter: object[] = [
        { amount: '0x5', currency: 'Fibd', allow_trampoline_routing: true, fallback_address: 'ckt1q' },
        { amount: '0x6', currency: 'Fibd', final_expiry_delta: '0x48190800', expiry: '0xffffffffffffffff' },
      ];
      for (const params of stricter) {
        expect('ok' in (await reference(params)), JSON.stringify(params)).toBe(true);
        expect(await strand(params)).toMatchObject({
          error: expect.stringMatching(/^InvalidParameter: (fallback_address|expiry)/),
        });
      }
      for (const params of cases) {
        const theirs = await reference(params);
        const ours = await strand(params);
        if ('ok' in theirs && 'ok' in ours) {
          const a = decodeInvoice((theirs.ok as { invoice_address: string }).invoice_address);
          const b = decodeInvoice((ours.ok as { invoice_address: string }).invoice_address);
          const fields = (i: typeof a) => ({
            amount: i.amount,
            // a random preimage (neither preimage nor hash given) makes a different hash on each side
            hash:
              'payment_preimage' in params || 'payment_hash' in params
                ? bytesToHex(i.data.paymentHash)
                : 'random',
            attrs: i.data.attrs.map((x) => (x.kind === 'PaymentSecret' ? { kind: x.kind } : x)),
          });
          expect({ params, ...fields(b) }).toEqual({ params, ...fields(a) });
        } else {
          expect({ params, ...ours }).toEqual({ params, ...theirs });
        }
      }
    } finally {
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('get/cancel/settle: the same statuses and refusals as fnn along the same story', async () => {
    const dir = fs.mkdtempSync(path.join(import.meta.dirname, '.tmp-interop-'));
    const db = openDatabase(path.join(dir, 'strand.db'), [invoiceSchema]);
    try {
      const svc = createInvoiceService({ db, nodeSecretKey: NODE_SK, currency: 'Fibd' });
      const specs = invoiceMethods(svc, { attrStyle: 'v08' });
      const strand = async (method: string, params: object) => {
        const spec = specs.find((m) => m.name === method)!;
        try {
          const r = (await spec.handler(spec.params!.parse(params), { transport: 'http' })) as {
            status?: string;
          };
          return { ok: r.status ?? r };
        } catch (e) {
          if (!(e instanceof DomainError)) throw e;
          return { error: e.message, data: JSON.parse(stringify(e.data)) };
        }
      };
      const reference = async (method: string, params: object) => {
        try {
          const r = (await ref.call(method, [params])) as { status?: string };
          return { ok: r.status ?? r };
        } catch (e) {
          const text = String((e as Error).message ?? e);
          const data = /data: Some\(RawValue\((.*)\)\) \}$/.exec(text)?.[1];
          return { error: refMessage(text), data: data ? JSON.parse(data) : null };
        }
      };
      const pre = (b: number) => '0x' + b.toString(16).padStart(2, '0').repeat(32);
      const hashOf = (b: number) => bytesToHex(ckbHash(Buffer.from(pre(b).slice(2), 'hex')));
      const story: [string, object][] = [
        ['new_invoice', { amount: '0x1', currency: 'Fibd', payment_hash: hashOf(0x71) }],
        ['get_invoice', { payment_hash: hashOf(0x71) }],
        ['settle_invoice', { payment_hash: hashOf(0x71), payment_preimage: pre(0x72) }],
        ['settle_invoice', { payment_hash: hashOf(0x71), payment_preimage: pre(0x71) }],
        ['cancel_invoice', { payment_hash: hashOf(0x71) }],
        ['cancel_invoice', { payment_hash: hashOf(0x71) }],
        ['settle_invoice', { payment_hash: hashOf(0x71), payment_preimage: pre(0x71) }],
        ['get_invoice', { payment_hash: hashOf(0x71) }],
        ['get_invoice', { payment_hash: hashOf(0x73) }],
        ['cancel_invoice', { payment_hash: hashOf(0x73) }],
        ['settle_invoice', { payment_hash: hashOf(0x73), payment_preimage: pre(0x73) }],
        ['new_invoice', { amount: '0x1', currency: 'Fibd', payment_preimage: pre(0x74), expiry: '0x1' }],
        ['wait', {}],
        ['get_invoice', { payment_hash: hashOf(0x74) }],
        ['settle_invoice', { payment_hash: hashOf(0x74), payment_preimage: pre(0x74) }],
        ['cancel_invoice', { payment_hash: hashOf(0x74) }],
        ['get_invoice', { payment_hash: hashOf(0x74) }],
      ];
      for (const [method, params] of story) {
        if (method === 'wait') {
          await new Promise((r) => setTimeout(r, 1100));
          continue;
        }
        const theirs = await reference(method, params);
        const ours = await strand(method, params);
        const norm = (r: { ok?: unknown }) => ('ok' in r && typeof r.ok === 'object' ? { ok: 'created' } : r);
        expect({ method, params, ...norm(ours) }).toEqual({ method, params, ...norm(theirs) });
      }
    } finally {
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('agrees on the vectors: V3 parses; the v0.4-layout V1 is refused by v0.8 (Strand accepts it)', async () => {
    const v3 = await ref.call('parse_invoice', [{ invoice: V.V3 }]);
    expect(v3.invoice).toEqual(invoiceToJson(decodeInvoice(V.V3), 'v08'));
    expect(refMessage(await refError(ref, 'parse_invoice', [{ invoice: V.V1 }]))).toBe(
      "Molecule error: ExpiryTimeReader total size doesn't match, expect 8, actual 16",
    );
    expect(await refError(ref, 'parse_invoice', [{ invoice: V.V4_TWIN }])).toMatch(
      /Bech32 error: invalid checksum/,
    );
    expect(ref.errors).toEqual([]);
  });
});
