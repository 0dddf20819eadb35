/**
 * The Lightning side: LND's gRPC API (the services fnn's cch uses: invoicesrpc AddHoldInvoice,
 * SettleInvoice, CancelInvoice, SubscribeSingleInvoice; routerrpc SendPaymentV2, TrackPaymentV2),
 * reached through the `lightning` package, which bundles LND's proto files and builds the
 * authenticated gRPC clients (TLS with LND's certificate, the macaroon in every call's metadata).
 * The calls go to those clients as LND defines them, so each request carries exactly fnn's
 * fields (`cltv_limit`, `timeout_seconds`, …).
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { InvoiceStatus, PaymentStatus } from './order.ts';

export interface LndConnection {
  /** `https://host:port` (fnn's `lnd_rpc_url`) or `host:port`. */
  url: string;
  /** LND's `tls.cert` (PEM); absent: the system's CAs. */
  certPath?: string;
  /** LND's macaroon file (binary). */
  macaroonPath?: string;
}

export interface PaymentUpdate {
  status: PaymentStatus;
  preimage?: string;
  failureReason?: string;
}

/** What the hub needs from a Lightning node; the tests' double serves the same gRPC API. */
export interface LightningBackend {
  addHoldInvoice(req: {
    paymentHash: string;
    valueMsat: bigint;
    expirySeconds: number;
    cltvExpiry: number;
  }): Promise<string>;
  settleInvoice(preimage: string): Promise<void>;
  cancelInvoice(paymentHash: string): Promise<void>;
  /** Follows one invoice (SubscribeSingleInvoice) until `stop`; `onError` when the stream breaks. */
  trackInvoice(
    paymentHash: string,
    onStatus: (s: InvoiceStatus) => void,
    onError: (e: Error) => void,
  ): () => void;
  /** SendPaymentV2: updates until the payment ends; a refusal of the call itself goes to `onError`. */
  sendPayment(
    req: { payReq: string; cltvLimit: number; timeoutSeconds: number },
    onUpdate: (u: PaymentUpdate) => void,
    onError: (e: LndCallError) => void,
  ): () => void;
  /** TrackPaymentV2: a payment sent before (after a restart, or when SendPaymentV2 found one). */
  trackPayment(
    paymentHash: string,
    onUpdate: (u: PaymentUpdate) => void,
    onError: (e: LndCallError) => void,
  ): () => void;
  close(): void;
}

/** A gRPC failure: `code` is the gRPC status code (3 InvalidArgument, 6 AlreadyExists, 14 Unavailable, …). */
export class LndCallError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const GRPC_INVALID_ARGUMENT = 3;

/**
 * fnn's rule for SendPaymentV2 failures that retrying cannot fix. LND answers these validation
 * failures with gRPC status UNKNOWN and no detail, so its message is the only sign of which one
 * it is; fnn matches the same texts (`is_permanent_error` in its `send_outgoing_payment.rs`).
 */
export function isPermanentPaymentError(e: LndCallError): boolean {
  if (e.code === GRPC_INVALID_ARGUMENT) return true;
  if (e.code !== 2) return false;
  const msg = e.message.toLowerCase();
  return [
    'self-payments not allowed',
    'invoice is already paid',
    'invoice expired',
    'incorrect payment amount',
    'payment hash mismatch',
    'no route',
    'unable to find a path to destination',
  ].some((s) => msg.includes(s));
}

export const isPermanentSettleError = (e: LndCallError) => e.code === GRPC_INVALID_ARGUMENT;

const INVOICE_STATES: Record<string, InvoiceStatus> = {
  OPEN: 'Open',
  ACCEPTED: 'Received',
  SETTLED: 'Paid',
  CANCELED: 'Cancelled',
};
const PAYMENT_STATES: Record<string, PaymentStatus> = {
  INITIATED: 'Created',
  IN_FLIGHT: 'Inflight',
  SUCCEEDED: 'Success',
  FAILED: 'Failed',
};

const hex = (s: string) => Buffer.from(s.replace(/^0x/, ''), 'hex');
const asError = (e: { code?: number; details?: string; message?: string }) =>
  new LndCallError(e.code ?? 2, e.details ?? e.message ?? String(e));

interface Stream {
  on(event: string, fn: (x: never) => void): void;
  cancel(): void;
}

function paymentUpdate(p: {
  status: string;
  payment_preimage?: string;
  failure_reason?: string;
}): PaymentUpdate {
  const status = PAYMENT_STATES[p.status] ?? 'Inflight';
  const preimage =
    p.payment_preimage && /[1-9a-f]/.test(p.payment_preimage) ? `0x${p.payment_preimage}` : undefined;
  return {
    status,
    ...(status === 'Success' && preimage ? { preimage } : {}),
    ...(status === 'Failed'
      ? { failureReason: `Lightning payment failed: ${p.failure_reason ?? 'unknown'}` }
      : {}),
  };
}

/**
 * The LND client package, loaded on first use: it brings gRPC and LND's protocol definitions
 * (~7 MB of heap, ~0.2 s of start-up), which a node without the cch service never needs and
 * would otherwise keep, marking them again at every full garbage collection.
 */
function lightning(): typeof import('lightning') {
  return createRequire(import.meta.url)('lightning');
}

export function connectLnd(conn: LndConnection): LightningBackend {
  const read = (file: string, field: string) => {
    try {
      return fs.readFileSync(file);
    } catch (e) {
      throw new Error(
        `cch.${field}: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
  };
  const cert = conn.certPath ? read(conn.certPath, 'lnd_cert_path').toString('base64') : undefined;
  const macaroon = conn.macaroonPath
    ? read(conn.macaroonPath, 'lnd_macaroon_path').toString('hex')
    : undefined;
  const socket = conn.url.replace(/^https?:\/\//, '').replace(/\/+$/, '');
  const { lnd } = lightning().authenticatedLndGrpc({ cert, macaroon, socket });
  type Callback = (err: { code?: number; details?: string } | null, res: unknown) => void;
  type UnaryClient = Record<string, (req: object, cb: Callback) => void>;
  const unary = <T>(client: UnaryClient, method: string, req: object): Promise<T> =>
    new Promise((resolve, reject) =>
      client[method]!(req, (err, res) => (err ? reject(asError(err)) : resolve(res as T))),
    );
  const follow = (
    stream: Stream,
    onUpdate: (u: PaymentUpdate) => void,
    onError: (e: LndCallError) => void,
  ) => {
    let stopped = false;
    stream.on('data', (p: never) => onUpdate(paymentUpdate(p)));
    stream.on('error', (e: never) => {
      if (!stopped) onError(asError(e));
    });
    return () => {
      stopped = true;
      stream.cancel();
    };
  };
  return {
    async addHoldInvoice(req) {
      const res = await unary<{ payment_request: string }>(lnd.invoices, 'addHoldInvoice', {
        hash: hex(req.paymentHash),
        value_msat: req.valueMsat.toString(),
        expiry: String(req.expirySeconds),
        cltv_expiry: String(req.cltvExpiry),
      });
      return res.payment_request;
    },
    async settleInvoice(preimage) {
      await unary(lnd.invoices, 'settleInvoice', { preimage: hex(preimage) });
    },
    async cancelInvoice(paymentHash) {
      await unary(lnd.invoices, 'cancelInvoice', { payment_hash: hex(paymentHash) });
    },
    trackInvoice(paymentHash, onStatus, onError) {
      let stopped = false;
      const stream: Stream = lnd.invoices.subscribeSingleInvoice({ r_hash: hex(paymentHash) });
      stream.on('data', (inv: never) => {
        const s = INVOICE_STATES[(inv as { state: string }).state];
        if (s) onStatus(s);
      });
      stream.on('error', (e: never) => {
        if (!stopped) onError(asError(e));
      });
      stream.on('end', () => {
        if (!stopped) onError(new LndCallError(14, 'invoice subscription ended'));
      });
      return () => {
        stopped = true;
        stream.cancel();
      };
    },
    sendPayment(req, onUpdate, onError) {
      const stream: Stream = lnd.router.sendPaymentV2({
        payment_request: req.payReq,
        timeout_seconds: req.timeoutSeconds,
        cltv_limit: req.cltvLimit,
        no_inflight_updates: false,
      });
      return follow(stream, onUpdate, onError);
    },
    trackPayment(paymentHash, onUpdate, onError) {
      const stream: Stream = lnd.router.trackPaymentV2({
        payment_hash: hex(paymentHash),
        no_inflight_updates: false,
      });
      return follow(stream, onUpdate, onError);
    },
    close() {
      for (const c of [lnd.invoices, lnd.router, lnd.default]) c?.close?.();
    },
  };
}
