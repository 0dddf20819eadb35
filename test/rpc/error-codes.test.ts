/**
 * The one table from error codes to JSON-RPC codes, through the real dispatcher: every code of
 * every domain answers with its table entry (-32000 unless listed), the message as thrown, and
 * the code in `error.data.error_code`; data an error carries (fnn's echoed params) goes out as is.
 */
import { describe, expect, it } from 'vitest';
import { CchError } from '../../src/cch/errors.ts';
import { ChainError } from '../../src/chain/errors.ts';
import { ChannelError } from '../../src/channel/errors.ts';
import type { DomainError } from '../../src/codec/errors.ts';
import { GraphError } from '../../src/graph/errors.ts';
import { InvoiceError } from '../../src/invoice/errors.ts';
import { PeerError } from '../../src/p2p/errors.ts';
import { PaymentError } from '../../src/payment/errors.ts';
import { OPEN_ACCESS } from '../../src/rpc/auth.ts';
import { Dispatcher } from '../../src/rpc/dispatch.ts';
import {
  DEFAULT_JSON_RPC_CODE,
  ERROR_CODES_BY_DOMAIN,
  type ErrorCode,
  JSON_RPC_CODE_OF,
  jsonRpcCodeOf,
} from '../../src/rpc/error-codes.ts';
import { RpcMethodError } from '../../src/rpc/errors.ts';
import { method } from '../../src/rpc/method.ts';
import { BackupPathError } from '../../src/store/errors.ts';
import { WatchtowerError } from '../../src/watchtower/errors.ts';

type Domain = keyof typeof ERROR_CODES_BY_DOMAIN;

/** An error of each domain's class with a given code (the store's one class has one code). */
const make: Record<Domain, (code: string, message: string) => DomainError> = {
  chain: (c, m) => new ChainError(c as never, m),
  store: (_c, m) => new BackupPathError(m),
  peer: (c, m) => new PeerError(c as never, m),
  channel: (c, m) => new ChannelError(c as never, m),
  graph: (c, m) => new GraphError(c as never, m),
  invoice: (c, m) => new InvoiceError(c as never, m),
  payment: (c, m) => new PaymentError(c as never, m),
  watchtower: (c, m) => new WatchtowerError(c as never, m),
  cch: (c, m) => new CchError(c as never, m),
  rpc: (c, m) => new RpcMethodError(c as never, m),
};

/** A dispatcher whose `node_info` throws `error`. */
async function answer(error: Error) {
  const d = new Dispatcher(
    [method({ name: 'node_info', module: 'info', params: null, handler: () => Promise.reject(error) })],
    OPEN_ACCESS,
  );
  const out = await d.handleValue({ jsonrpc: '2.0', id: 1, method: 'node_info', params: [] }, undefined, {
    transport: 'http',
  });
  return (out as { error: { code: number; message: string; data?: unknown } }).error;
}

const all = (Object.keys(ERROR_CODES_BY_DOMAIN) as Domain[]).flatMap((domain) =>
  Object.keys(ERROR_CODES_BY_DOMAIN[domain]).map((code) => [domain, code] as const),
);

describe('error codes → JSON-RPC codes', () => {
  it('every domain lists its codes, each with what it means', () => {
    expect(all.length).toBeGreaterThan(80);
    for (const [domain, code] of all) {
      expect(code, domain).toMatch(/^[A-Z][A-Za-z0-9]+$/);
      expect((ERROR_CODES_BY_DOMAIN[domain] as Record<string, string>)[code]!.length).toBeGreaterThan(10);
    }
  });

  it('the table names known codes only, and -32000 is the default', () => {
    const known = new Set(all.map(([, code]) => code));
    for (const code of Object.keys(JSON_RPC_CODE_OF)) expect(known.has(code), code).toBe(true);
    expect(DEFAULT_JSON_RPC_CODE).toBe(-32000);
    expect(jsonRpcCodeOf('NotACodeOfAnyDomain')).toBe(-32000);
  });

  it.each(all)('%s %s: the table code, the message as thrown, data.error_code', async (domain, code) => {
    const text = `refused: ${domain} ${code} — fnn's text, as is`;
    const e = make[domain](code, text);
    expect(e.code).toBe(domain === 'store' ? 'BackupPathInvalid' : code);
    expect(await answer(e)).toEqual({
      code: JSON_RPC_CODE_OF[code as ErrorCode] ?? -32000,
      message: text,
      data: { error_code: e.code },
    });
  });

  it('data the error carries (the params fnn echoes) is sent as fnn sends it', async () => {
    const params = { payment_hash: `0x${'ee'.repeat(32)}` };
    const e = new InvoiceError('InvoiceNotFound', 'invoice not found').withData(params);
    expect(e).toBeInstanceOf(InvoiceError);
    expect([e.code, e.message]).toEqual(['InvoiceNotFound', 'invoice not found']);
    expect(await answer(e)).toEqual({ code: -32000, message: 'invoice not found', data: params });
  });

  it('`is` checks the class and the code, never the text', () => {
    const e = new ChannelError('TlcNotFound', 'Invalid parameter: TLC 1 not found or not removable', {
      tlcId: 1n,
    });
    expect(ChannelError.is(e, 'TlcNotFound')).toBe(true);
    expect(ChannelError.is(e, 'ChannelClosed', 'TlcNotFound')).toBe(true);
    expect(ChannelError.is(e)).toBe(true);
    expect(ChannelError.is(e, 'InvalidState')).toBe(false);
    expect(ChannelError.is(new ChannelError('InvalidState', e.message), 'TlcNotFound')).toBe(false);
    expect(PeerError.is(e)).toBe(false);
    expect(ChannelError.is(new Error(e.message), 'TlcNotFound')).toBe(false);
    expect(e.details).toEqual({ tlcId: 1n });
  });
});
