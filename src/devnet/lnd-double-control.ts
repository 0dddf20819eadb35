/**
 * The LND double's control endpoint on a devnet (`strand devnet --cch`): a small JSON-RPC server
 * through which a person (or a script, with `strand rpc --url`) plays the outside Lightning world.
 *
 * | method | params | what the outside world does |
 * |---|---|---|
 * | `new_invoice` | `{amount_sat, expiry_seconds?}` | an outside payee's BOLT 11 invoice, for `send_btc` |
 * | `pay_invoice` | `{payment_request}` | the outside payer pays the hub's hold invoice (from `receive_btc`) |
 * | `get_invoice` | `{payment_hash}` | a hub hold invoice: `state` (OPEN, ACCEPTED, SETTLED, CANCELED) and, once settled, `preimage` |
 * | `get_payment` | `{payment_hash}` | a payment the hub made: `state`, `cltv_limit` |
 * | `set_payee` | `{behaviour}` | `succeed`, `fail` or `hold`: what outside payees do with the hub's payments |
 * | `release_payment` | `{payment_hash, outcome}` | ends a held payment: `succeed` or `fail` |
 */
import http from 'node:http';
import type { LndDouble, PayeeBehaviour } from './lnd-double.ts';

type Handler = (p: Record<string, unknown>) => unknown;

export async function startLndDoubleControl(double: LndDouble, port: number): Promise<http.Server> {
  const hash = (p: Record<string, unknown>) => String(p.payment_hash ?? '').replace(/^0x/, '');
  const methods: Record<string, Handler> = {
    new_invoice: (p) => {
      const o = double.outsideInvoice({
        amountSat: Number(p.amount_sat),
        ...(p.expiry_seconds ? { expirySeconds: Number(p.expiry_seconds) } : {}),
      });
      return { payment_request: o.request, payment_hash: o.paymentHash };
    },
    pay_invoice: (p) => {
      // The settlement (or refund) is read back with get_invoice.
      double.payHoldInvoice(String(p.payment_request)).catch(() => {});
      return { state: 'ACCEPTED' };
    },
    get_invoice: (p) => {
      const inv = double.invoices.get(hash(p));
      if (!inv) throw new Error('no such invoice');
      return {
        state: inv.state,
        value_msat: inv.valueMsat.toString(),
        preimage: inv.preimage ? `0x${inv.preimage}` : null,
      };
    },
    get_payment: (p) => {
      const pay = double.payments.get(hash(p));
      if (!pay) throw new Error('no such payment');
      return { state: pay.state, cltv_limit: pay.cltvLimit };
    },
    set_payee: (p) => {
      if (!['succeed', 'fail', 'hold'].includes(String(p.behaviour)))
        throw new Error('behaviour: succeed, fail or hold');
      double.payeeBehaviour = p.behaviour as PayeeBehaviour;
      return { behaviour: double.payeeBehaviour };
    },
    release_payment: (p) => {
      double.releasePayment(hash(p), p.outcome === 'fail' ? 'fail' : 'succeed');
      return null;
    },
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
      if (body.length > 65_536) req.destroy();
    });
    req.on('end', () => {
      let id: unknown = null;
      let reply: object;
      try {
        const msg = JSON.parse(body);
        id = msg.id ?? null;
        const fn = methods[msg.method];
        if (!fn) reply = { error: { code: -32601, message: `unknown method ${msg.method}` } };
        else reply = { result: fn((Array.isArray(msg.params) ? msg.params[0] : msg.params) ?? {}) };
      } catch (e) {
        reply = { error: { code: -32000, message: (e as Error).message } };
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id, ...reply }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return server;
}
