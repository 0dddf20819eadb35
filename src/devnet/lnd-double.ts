/**
 * A Lightning double at the hub's boundary, for tests and for `strand devnet --cch` (no LND runs
 * on a development machine): a gRPC server speaking LND's API from the very proto
 * files the `lightning` client package bundles (invoicesrpc.Invoices, routerrpc.Router and
 * lnrpc.Lightning's GetInfo / DecodePayReq), over TLS with a certificate made for it, checking the
 * macaroon of every call. Invoices are real BOLT 11 requests (regtest), signed with the double's
 * node key; hold invoices go OPEN → ACCEPTED → SETTLED or CANCELED as in LND.
 *
 * A test plays the outside Lightning world through it:
 * - the outside payer of a hub's hold invoice: `payHoldInvoice(request)` (the invoice becomes
 *   ACCEPTED; the returned promise gives the preimage once the hub settles, or rejects when the
 *   hub cancels);
 * - the outside payee the hub pays: `outsideInvoice({ amountSat })` makes an invoice of another
 *   node, and `payeeBehaviour` says what happens when the hub pays it: `succeed` (the preimage
 *   comes back), `fail` (FAILURE_REASON_NO_ROUTE) or `hold` (IN_FLIGHT until `releasePayment`).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import bolt11 from 'bolt11';
import { BTC_NETWORKS } from '../cch/index.ts';

/** The proto files the `lightning` client package ships: both ends read the same definitions. */
const PROTOS = path.join(
  path.dirname(createRequire(import.meta.url).resolve('lightning/package.json')),
  'grpc/protos',
);
/** The `lightning` package's loader options, so both ends read the protos alike. */
const LOADER = { defaults: true, enums: String, keepCase: true, longs: String, oneofs: true };

type InvoiceState = 'OPEN' | 'ACCEPTED' | 'SETTLED' | 'CANCELED';
interface HoldInvoice {
  hash: string;
  request: string;
  valueMsat: bigint;
  cltvExpiry: number;
  expiresAt: number;
  state: InvoiceState;
  preimage?: string;
  watchers: Set<grpc.ServerWritableStream<unknown, unknown>>;
  onEnd?: { resolve(preimage: string): void; reject(e: Error): void };
}
type PaymentState = 'IN_FLIGHT' | 'SUCCEEDED' | 'FAILED';
export interface HubPayment {
  hash: string;
  request: string;
  cltvLimit: number;
  timeoutSeconds: number;
  state: PaymentState;
  watchers: Set<grpc.ServerWritableStream<unknown, unknown>>;
}
export type PayeeBehaviour = 'succeed' | 'fail' | 'hold';

/** Ends a server stream with a gRPC status, as LND refuses a streaming call. */
function endWith(call: grpc.ServerWritableStream<unknown, unknown>, code: number, details: string): void {
  call.emit('error', { code, details });
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

export class LndDouble {
  readonly invoices = new Map<string, HoldInvoice>();
  readonly payments = new Map<string, HubPayment>();
  /** Outside payees' invoices: hash → preimage. */
  private readonly outside = new Map<string, string>();
  /** What an outside payee does when the hub pays it. */
  payeeBehaviour: PayeeBehaviour = 'succeed';
  /** While true, every call is refused UNAVAILABLE (LND down). */
  unavailable = false;
  readonly nodeKey = randomBytes(32);
  private readonly outsideKey = randomBytes(32);

  private constructor(
    private readonly server: grpc.Server,
    readonly port: number,
    readonly dir: string,
    private readonly macaroon: string,
  ) {}

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }
  get certPath(): string {
    return path.join(this.dir, 'tls.cert');
  }
  get macaroonPath(): string {
    return path.join(this.dir, 'admin.macaroon');
  }

  static async start(port = 0, dir?: string): Promise<LndDouble> {
    const home = dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'strand-lnd-double-'));
    const cert = path.join(home, 'tls.cert');
    const key = path.join(home, 'tls.key');
    if (!fs.existsSync(cert))
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-keyout',
          key,
          '-out',
          cert,
          '-days',
          '3650',
          '-subj',
          '/CN=localhost',
          '-addext',
          'subjectAltName=IP:127.0.0.1,DNS:localhost',
        ],
        { stdio: 'ignore' },
      );
    const macPath = path.join(home, 'admin.macaroon');
    if (!fs.existsSync(macPath)) fs.writeFileSync(macPath, randomBytes(64));
    const macaroon = fs.readFileSync(macPath).toString('hex');
    const server = new grpc.Server();
    const creds = grpc.ServerCredentials.createSsl(null, [
      { cert_chain: fs.readFileSync(cert), private_key: fs.readFileSync(key) },
    ]);
    const bound = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${port}`, creds, (err, p) => (err ? reject(err) : resolve(p))),
    );
    const double = new LndDouble(server, bound, home, macaroon);
    double.register();
    return double;
  }

  async stop(): Promise<void> {
    for (const inv of this.invoices.values()) for (const w of inv.watchers) w.end();
    for (const p of this.payments.values()) for (const w of p.watchers) w.end();
    // Open streams would hold a graceful shutdown forever.
    this.server.forceShutdown();
  }

  // ------------------------------------------------------------------- the outside world's moves

  /** An outside node's invoice for the hub to pay (regtest unless `network` says otherwise). */
  outsideInvoice(o: {
    amountSat?: number;
    expirySeconds?: number;
    minFinalCltv?: number;
    network?: 'bc' | 'tb' | 'bcrt';
    timestamp?: number;
  }): { request: string; paymentHash: string; preimage: string } {
    const preimage = randomBytes(32);
    const hash = hex(sha256(preimage));
    this.outside.set(hash, hex(preimage));
    const request = this.sign(this.outsideKey, hash, {
      ...o,
      amountMsat: o.amountSat === undefined ? undefined : BigInt(o.amountSat) * 1000n,
    });
    return { request, paymentHash: `0x${hash}`, preimage: `0x${hex(preimage)}` };
  }

  /**
   * The outside payer pays the hub's hold invoice: it is ACCEPTED now; the promise resolves with
   * the preimage when the hub settles, and rejects when the hub cancels (the payer refunded).
   */
  payHoldInvoice(request: string): Promise<string> {
    const decoded = bolt11.decode(request, BTC_NETWORKS.bcrt);
    const hash = String(decoded.tags.find((t) => t.tagName === 'payment_hash')?.data);
    const inv = this.invoices.get(hash);
    if (!inv) throw new Error('no such invoice at this node');
    if (inv.state !== 'OPEN') throw new Error(`invoice is ${inv.state}`);
    const done = new Promise<string>((resolve, reject) => {
      inv.onEnd = { resolve, reject };
    });
    // A refund may come before the test awaits it: no unhandled rejection meanwhile.
    done.catch(() => {});
    this.setInvoiceState(inv, 'ACCEPTED');
    return done;
  }

  /** Ends a payment held by its outside payee (`payeeBehaviour = 'hold'`). */
  releasePayment(paymentHash: string, outcome: 'succeed' | 'fail'): void {
    const p = this.payments.get(paymentHash.replace(/^0x/, ''));
    if (!p) throw new Error('no such payment');
    this.endPayment(p, outcome);
  }

  // ----------------------------------------------------------------------------- the server

  private sign(
    key: Uint8Array,
    hash: string,
    o: {
      amountMsat?: bigint;
      expirySeconds?: number;
      minFinalCltv?: number;
      network?: string;
      timestamp?: number;
    },
  ): string {
    const unsigned = bolt11.encode({
      network: BTC_NETWORKS[o.network ?? 'bcrt'],
      ...(o.amountMsat === undefined ? {} : { millisatoshis: o.amountMsat.toString() }),
      timestamp: o.timestamp ?? Math.floor(Date.now() / 1000),
      tags: [
        { tagName: 'payment_hash', data: hash },
        { tagName: 'payment_secret', data: hex(randomBytes(32)) },
        { tagName: 'description', data: 'lnd double' },
        { tagName: 'expire_time', data: o.expirySeconds ?? 86_400 },
        { tagName: 'min_final_cltv_expiry', data: o.minFinalCltv ?? 40 },
      ],
    });
    return bolt11.sign(unsigned, Buffer.from(key)).paymentRequest!;
  }

  private setInvoiceState(inv: HoldInvoice, state: InvoiceState): void {
    inv.state = state;
    for (const w of inv.watchers) w.write(this.invoiceMessage(inv));
    if (state === 'SETTLED') inv.onEnd?.resolve(`0x${inv.preimage}`);
    if (state === 'CANCELED') inv.onEnd?.reject(new Error('invoice canceled by the hub'));
  }

  private invoiceMessage(inv: HoldInvoice) {
    return {
      r_hash: Buffer.from(inv.hash, 'hex'),
      r_preimage: inv.preimage ? Buffer.from(inv.preimage, 'hex') : Buffer.alloc(0),
      value_msat: inv.valueMsat.toString(),
      payment_request: inv.request,
      cltv_expiry: String(inv.cltvExpiry),
      state: inv.state,
      amt_paid_msat: inv.state === 'OPEN' || inv.state === 'CANCELED' ? '0' : inv.valueMsat.toString(),
    };
  }

  private paymentMessage(p: HubPayment) {
    return {
      payment_hash: p.hash,
      payment_request: p.request,
      status: p.state,
      payment_preimage: p.state === 'SUCCEEDED' ? this.outside.get(p.hash) : '0'.repeat(64),
      failure_reason: p.state === 'FAILED' ? 'FAILURE_REASON_NO_ROUTE' : 'FAILURE_REASON_NONE',
    };
  }

  private endPayment(p: HubPayment, outcome: 'succeed' | 'fail'): void {
    p.state = outcome === 'succeed' ? 'SUCCEEDED' : 'FAILED';
    for (const w of p.watchers) {
      w.write(this.paymentMessage(p));
      w.end();
    }
    p.watchers.clear();
  }

  /** A call's guard: UNAVAILABLE while `unavailable`, UNAUTHENTICATED without the macaroon. */
  private refuse(call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>) {
    if (this.unavailable) return { code: grpc.status.UNAVAILABLE, details: 'lnd double is down' };
    if (call.metadata.get('macaroon')[0] !== this.macaroon)
      return { code: grpc.status.UNAUTHENTICATED, details: 'verification failed: signature mismatch' };
    return undefined;
  }

  private register(): void {
    const def = loadSync(
      ['lightning.proto', 'invoices.proto', 'router.proto'].map((f) => path.join(PROTOS, f)),
      { ...LOADER, includeDirs: [PROTOS] },
    );
    type Service = { service: grpc.ServiceDefinition };
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      lnrpc: { Lightning: Service };
      invoicesrpc: { Invoices: Service };
      routerrpc: { Router: Service };
    };
    // Messages as the proto loader gives them (keepCase, longs as strings, bytes as Buffers).
    type Msg = Record<string, never>;
    type Unary = (call: grpc.ServerUnaryCall<Msg, object>, cb: grpc.sendUnaryData<object>) => void;
    type Stream = (call: grpc.ServerWritableStream<Msg, object>) => void;
    const unary =
      (fn: (req: Msg) => object): Unary =>
      (call, cb) => {
        const refused = this.refuse(call);
        if (refused) return cb(refused);
        try {
          cb(null, fn(call.request));
        } catch (e) {
          const err = e as { code?: number; message: string };
          cb({ code: err.code ?? grpc.status.UNKNOWN, details: err.message });
        }
      };
    const fail = (code: number, message: string) => Object.assign(new Error(message), { code });
    const stream =
      (fn: Stream): Stream =>
      (call) => {
        const refused = this.refuse(call);
        if (refused) return endWith(call, refused.code, refused.details);
        fn(call);
      };

    this.server.addService(pkg.lnrpc.Lightning.service, {
      getInfo: unary(() => ({
        identity_pubkey: hex(secp256k1.getPublicKey(this.nodeKey, true)),
        block_height: 1000,
        synced_to_chain: true,
        chains: [{ chain: 'bitcoin', network: 'regtest' }],
      })),
      decodePayReq: unary((req) => {
        const d = bolt11.decode(req.pay_req, BTC_NETWORKS.bcrt);
        const tag = (n: string) => d.tags.find((t) => t.tagName === n)?.data;
        return {
          destination: d.payeeNodeKey,
          payment_hash: tag('payment_hash'),
          num_msat: d.millisatoshis ?? '0',
          timestamp: String(d.timestamp),
          expiry: String(tag('expire_time') ?? 3600),
          cltv_expiry: String(tag('min_final_cltv_expiry') ?? 18),
        };
      }),
    });

    this.server.addService(pkg.invoicesrpc.Invoices.service, {
      addHoldInvoice: unary((req) => {
        const hash = hex(req.hash);
        if (hash.length !== 64) throw fail(grpc.status.INVALID_ARGUMENT, 'payment hash must be 32 bytes');
        if (this.invoices.has(hash))
          throw fail(grpc.status.UNKNOWN, 'invoice with payment hash already exists');
        const expiry = Number(req.expiry) || 86_400;
        const cltv = Number(req.cltv_expiry) || 80;
        const request = this.sign(this.nodeKey, hash, {
          amountMsat: BigInt(req.value_msat),
          expirySeconds: expiry,
          minFinalCltv: cltv,
        });
        this.invoices.set(hash, {
          hash,
          request,
          valueMsat: BigInt(req.value_msat),
          cltvExpiry: cltv,
          expiresAt: Math.floor(Date.now() / 1000) + expiry,
          state: 'OPEN',
          watchers: new Set(),
        });
        return {
          payment_request: request,
          add_index: String(this.invoices.size),
          payment_addr: randomBytes(32),
        };
      }),
      settleInvoice: unary((req) => {
        const preimage = hex(req.preimage);
        const inv = this.invoices.get(hex(sha256(Buffer.from(preimage, 'hex'))));
        if (!inv) throw fail(grpc.status.NOT_FOUND, 'unable to locate invoice');
        if (inv.state === 'SETTLED') return {};
        if (inv.state !== 'ACCEPTED')
          throw fail(grpc.status.UNKNOWN, `invoice is ${inv.state.toLowerCase()}`);
        inv.preimage = preimage;
        this.setInvoiceState(inv, 'SETTLED');
        return {};
      }),
      cancelInvoice: unary((req) => {
        const inv = this.invoices.get(hex(req.payment_hash));
        if (!inv) throw fail(grpc.status.NOT_FOUND, 'unable to locate invoice');
        if (inv.state === 'SETTLED') throw fail(grpc.status.UNKNOWN, 'invoice already settled');
        if (inv.state !== 'CANCELED') this.setInvoiceState(inv, 'CANCELED');
        return {};
      }),
      subscribeSingleInvoice: stream((call) => {
        const inv = this.invoices.get(hex(call.request.r_hash));
        if (!inv) return endWith(call, grpc.status.NOT_FOUND, 'unable to locate invoice');
        inv.watchers.add(call);
        call.on('cancelled', () => inv.watchers.delete(call));
        call.write(this.invoiceMessage(inv));
      }),
    });

    this.server.addService(pkg.routerrpc.Router.service, {
      sendPaymentV2: stream((call) => {
        const req = call.request;
        let hash: string;
        try {
          const d = bolt11.decode(req.payment_request, BTC_NETWORKS.bcrt);
          hash = String(d.tags.find((t) => t.tagName === 'payment_hash')?.data);
        } catch (e) {
          return endWith(
            call,
            grpc.status.INVALID_ARGUMENT,
            `invalid payment request: ${(e as Error).message}`,
          );
        }
        const known = this.payments.get(hash);
        if (known && known.state !== 'FAILED')
          return endWith(call, grpc.status.ALREADY_EXISTS, 'payment is in transition');
        if (this.invoices.has(hash)) return endWith(call, grpc.status.UNKNOWN, 'self-payments not allowed');
        const p: HubPayment = {
          hash,
          request: req.payment_request,
          cltvLimit: Number(req.cltv_limit),
          timeoutSeconds: Number(req.timeout_seconds),
          state: 'IN_FLIGHT',
          watchers: new Set([call]),
        };
        this.payments.set(hash, p);
        call.on('cancelled', () => p.watchers.delete(call));
        call.write(this.paymentMessage(p));
        if (!this.outside.has(hash)) return this.endPayment(p, 'fail');
        if (this.payeeBehaviour !== 'hold')
          setImmediate(() => this.endPayment(p, this.payeeBehaviour as 'succeed'));
      }),
      trackPaymentV2: stream((call) => {
        const p = this.payments.get(hex(call.request.payment_hash));
        if (!p) return endWith(call, grpc.status.NOT_FOUND, "payment isn't initiated");
        call.write(this.paymentMessage(p));
        if (p.state !== 'IN_FLIGHT') return call.end();
        p.watchers.add(call);
        call.on('cancelled', () => p.watchers.delete(call));
      }),
    });
  }
}
