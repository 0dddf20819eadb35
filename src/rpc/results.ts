/**
 * Zod schemas of what the methods answer, as JSON (hex strings, not bigints). They describe the
 * output only: the OpenRPC document publishes them (`openrpc.ts`) and a process test checks real
 * answers against the published JSON Schema, so a field added to a handler must be added here.
 * Objects are strict: an undeclared field is a mismatch, not a silent extra.
 */
import { z } from 'zod';
import { ORDER_STATUSES } from '../cch/index.ts';
import { STATE_NAMES } from '../channel/index.ts';
import { INVOICE_STATUSES } from '../invoice/index.ts';

/** Hex quantity as written: `0x`, lower case, no leading zeros. */
export const hexQ = z.string().regex(/^0x(0|[1-9a-f][0-9a-f]*)$/);
export const hash = z.string().regex(/^0x[0-9a-f]{64}$/);
/** Compressed public key, 66 hex chars without `0x`. */
export const pubkeyHex = z.string().regex(/^0[23][0-9a-f]{64}$/);
export const hexBytes = z.string().regex(/^0x([0-9a-f]{2})*$/);
/** Molecule OutPoint: 32-byte tx hash ‖ 4-byte little-endian index. */
export const outpointHex = z.string().regex(/^0x[0-9a-f]{72}$/);
export const peerId = z.string().regex(/^Qm[1-9A-HJ-NP-Za-km-z]{44}$/);
const hashType = z.enum(['type', 'data', 'data1', 'data2']);
export const scriptOut = z.strictObject({ code_hash: hash, hash_type: hashType, args: hexBytes });

/** A CKB JSON transaction (ckb_jsonrpc_types). */
export const txOut = z.looseObject({
  version: hexQ,
  cell_deps: z.array(z.unknown()),
  header_deps: z.array(hash),
  inputs: z.array(z.unknown()),
  outputs: z.array(z.unknown()),
  outputs_data: z.array(hexBytes),
  witnesses: z.array(hexBytes),
});

export const nullResult = z.null();

const udtCfgInfo = z.strictObject({
  name: z.string(),
  script: scriptOut,
  auto_accept_amount: hexQ.nullable(),
  cell_deps: z.array(z.unknown()),
});

export const nodeInfoResult = z.strictObject({
  version: z.string(),
  commit_hash: z.string(),
  pubkey: pubkeyHex,
  features: z.array(z.string()),
  node_name: z.string().nullable(),
  addresses: z.array(z.string()),
  chain_hash: hash,
  open_channel_auto_accept_min_ckb_funding_amount: hexQ,
  auto_accept_channel_ckb_funding_amount: hexQ,
  default_funding_lock_script: scriptOut,
  tlc_expiry_delta: hexQ,
  tlc_min_value: hexQ,
  tlc_fee_proportional_millionths: hexQ,
  channel_count: hexQ,
  pending_channel_count: hexQ,
  peers_count: hexQ,
  udt_cfg_infos: z.array(udtCfgInfo),
  /** Strand's: `ok`, or `unreachable since <ISO time>` while the CKB RPC does not answer. */
  ckb_rpc_status: z.string().nullable(),
});

export const listPeersResult = z.strictObject({
  peers: z.array(z.strictObject({ pubkey: pubkeyHex, peer_id: peerId, address: z.string() })),
});

const flagName = z.string().regex(/^[A-Z_]+$/);

const tlcStatus = z.union([
  z.strictObject({
    Outbound: z.enum([
      'LocalAnnounced',
      'Committed',
      'RemoteRemoved',
      'RemoveWaitPrevAck',
      'RemoveWaitAck',
      'RemoveAckConfirmed',
    ]),
  }),
  z.strictObject({
    Inbound: z.enum([
      'RemoteAnnounced',
      'AnnounceWaitPrevAck',
      'AnnounceWaitAck',
      'Committed',
      'LocalRemoved',
      'RemoveAckConfirmed',
    ]),
  }),
]);

const channelFields = {
  channel_id: hash,
  is_public: z.boolean(),
  is_acceptor: z.boolean(),
  is_one_way: z.boolean(),
  channel_outpoint: outpointHex.nullable(),
  pubkey: pubkeyHex,
  funding_udt_type_script: scriptOut.nullable(),
  local_balance: hexQ,
  offered_tlc_balance: hexQ,
  remote_balance: hexQ,
  received_tlc_balance: hexQ,
  pending_tlcs: z.array(
    z.strictObject({
      id: hexQ,
      amount: hexQ,
      payment_hash: hash,
      expiry: hexQ,
      forwarding_channel_id: hash.nullable(),
      forwarding_tlc_id: hexQ.nullable(),
      status: tlcStatus,
    }),
  ),
  latest_commitment_transaction_hash: hash.nullable(),
  created_at: hexQ,
  enabled: z.boolean(),
  tlc_expiry_delta: hexQ,
  tlc_fee_proportional_millionths: hexQ,
  shutdown_transaction_hash: hash.nullable(),
  failure_detail: z.string().nullable(),
};

/** The seed's channel record: `peer_id` beside `pubkey`, SCREAMING_CASE states, flags as a list. */
export const channelRecord = z.strictObject({
  ...channelFields,
  peer_id: peerId,
  state: z.strictObject({ state_name: z.enum(STATE_NAMES), state_flags: z.array(flagName) }),
});

export const listChannelsResult = z.strictObject({ channels: z.array(channelRecord) });

export const paymentRecord = z.strictObject({
  payment_hash: hash,
  status: z.enum(['Created', 'Inflight', 'Success', 'Failed']),
  created_at: hexQ,
  last_updated_at: hexQ,
  failed_error: z.string().nullable(),
  fee: hexQ,
  custom_records: z.record(z.string(), hexBytes).nullable(),
  routers: z.array(
    z.strictObject({
      nodes: z.array(z.strictObject({ pubkey: pubkeyHex, amount: hexQ, channel_outpoint: outpointHex })),
    }),
  ),
});

export const listPaymentsResult = z.strictObject({
  payments: z.array(paymentRecord),
  last_cursor: hash.nullable(),
});

export const buildRouterResult = z.strictObject({
  router_hops: z.array(
    z.strictObject({
      target: pubkeyHex,
      channel_outpoint: outpointHex,
      amount_received: hexQ,
      incoming_tlc_expiry: hexQ,
    }),
  ),
});

/** One invoice attribute: an object with a single key, in the seed's PascalCase. */
export const seedAttr = z.union([
  z.strictObject({
    ExpiryTime: z.strictObject({ secs: z.union([z.number().int(), z.string()]), nanos: z.number().int() }),
  }),
  z.strictObject({ Description: z.string() }),
  z.strictObject({ FinalHtlcTimeout: hexQ }),
  z.strictObject({ FinalHtlcMinimumExpiryDelta: hexQ }),
  z.strictObject({ FallbackAddr: z.string() }),
  z.strictObject({ Feature: z.array(z.string()) }),
  z.strictObject({ UdtScript: hexBytes }),
  z.strictObject({ PayeePublicKey: pubkeyHex }),
  z.strictObject({ HashAlgorithm: z.enum(['ckb_hash', 'sha256']) }),
  z.strictObject({ PaymentSecret: hexBytes }),
]);

/** The same attributes as fnn v0.8 writes them: snake_case keys, expiry as a hex quantity. */
export const v08Attr = z.union([
  z.strictObject({ expiry_time: hexQ }),
  z.strictObject({ description: z.string() }),
  z.strictObject({ final_htlc_timeout: hexQ }),
  z.strictObject({ final_htlc_minimum_expiry_delta: hexQ }),
  z.strictObject({ fallback_addr: z.string() }),
  z.strictObject({ feature: z.array(z.string()) }),
  z.strictObject({ udt_script: hexBytes }),
  z.strictObject({ payee_public_key: pubkeyHex }),
  z.strictObject({ hash_algorithm: z.enum(['ckb_hash', 'sha256']) }),
  z.strictObject({ payment_secret: hexBytes }),
]);

export function invoiceJson(attr: z.ZodType) {
  return z.strictObject({
    currency: z.enum(['Fibb', 'Fibt', 'Fibd']),
    amount: hexQ.nullable(),
    signature: z
      .string()
      .regex(/^[0-9a-f]*$/)
      .nullable(),
    data: z.strictObject({ timestamp: hexQ, payment_hash: hash, attrs: z.array(attr) }),
  });
}

function buildInvoiceResults(attr: z.ZodType) {
  const invoice = invoiceJson(attr);
  const stored = z.strictObject({
    invoice_address: z.string(),
    invoice,
    status: z.enum(INVOICE_STATUSES),
  });
  return {
    new_invoice: z.strictObject({ invoice_address: z.string(), invoice }),
    parse_invoice: z.strictObject({ invoice }),
    get_invoice: stored,
    cancel_invoice: stored,
  };
}

const seedInvoiceResults = buildInvoiceResults(seedAttr);
/** The seed's invoice and stored invoice, exported once so that the typed client names them. */
export const invoiceRecord = seedInvoiceResults.parse_invoice.shape.invoice;
export const storedInvoiceRecord = seedInvoiceResults.get_invoice;

/** Invoice results, given the attribute style (`seedAttr` by default). */
export function invoiceResults(attr: z.ZodType = seedAttr) {
  return attr === seedAttr ? seedInvoiceResults : buildInvoiceResults(attr);
}

/** A UDT as the graph carries it: `args` is the announced text, not hex. */
const graphUdt = z.strictObject({
  name: z.string(),
  script: z.strictObject({ code_hash: hash, hash_type: hashType, args: z.string() }),
  auto_accept_amount: hexQ.nullable(),
  cell_deps: z.array(
    z.union([
      z.strictObject({ type_id: scriptOut }),
      z.strictObject({
        cell_dep: z.strictObject({
          out_point: z.strictObject({ tx_hash: hash, index: hexQ }),
          dep_type: z.enum(['code', 'dep_group']),
        }),
      }),
    ]),
  ),
});

export const graphNodesResult = z.strictObject({
  nodes: z.array(
    z.strictObject({
      node_name: z.string(),
      version: z.string(),
      addresses: z.array(z.string()),
      features: z.array(z.string()),
      pubkey: pubkeyHex,
      timestamp: hexQ,
      chain_hash: hash,
      auto_accept_min_ckb_funding_amount: hexQ,
      udt_cfg_infos: z.array(graphUdt),
    }),
  ),
  last_cursor: hexBytes,
});

/** One side's latest channel update as the graph holds it; `null` before the first. */
export const channelUpdateInfo = z
  .strictObject({
    timestamp: hexQ,
    enabled: z.boolean(),
    outbound_liquidity: hexQ.nullable(),
    tlc_expiry_delta: hexQ,
    tlc_minimum_value: hexQ,
    fee_rate: hexQ,
  })
  .nullable();

export const graphChannelsResult = z.strictObject({
  channels: z.array(
    z.strictObject({
      channel_outpoint: outpointHex,
      node1: pubkeyHex,
      node2: pubkeyHex,
      created_timestamp: hexQ,
      update_info_of_node1: channelUpdateInfo,
      update_info_of_node2: channelUpdateInfo,
      capacity: hexQ,
      chain_hash: hash,
      udt_type_script: scriptOut.nullable(),
    }),
  ),
  last_cursor: hexBytes,
});

/** The invoice a cross-chain order asks to be paid: the hub's Fiber or Lightning hold invoice. */
export const cchInvoice = z.union([
  z.strictObject({ Fiber: z.string() }),
  z.strictObject({ Lightning: z.string() }),
]);

/** A cross-chain order as send_btc, receive_btc and get_cch_order write it (`cch/order.ts` orderToJson). */
export const cchOrderRecord = z.strictObject({
  timestamp: hexQ,
  expiry_delta_seconds: hexQ,
  wrapped_btc_type_script: scriptOut,
  incoming_invoice: cchInvoice,
  outgoing_pay_req: z.string(),
  payment_hash: hash,
  amount_sats: hexQ,
  fee_sats: hexQ,
  status: z.enum(ORDER_STATUSES),
  failure_reason: z.string().nullable(),
});

/**
 * A store change as `subscribe_store_changes` notifications carry it (`params.result`), externally
 * tagged as in fiber-rpc.md §7 (`store/changes.ts`). Not a method's result: the typed client's
 * `StoreChange` is generated from it (`tools/gen-client-results.ts`).
 */
export const storeChange = z.union([
  z.strictObject({ PutPreimage: z.strictObject({ payment_hash: hash, payment_preimage: hash }) }),
  z.strictObject({
    PutCkbInvoiceStatus: z.strictObject({ payment_hash: hash, invoice_status: z.enum(INVOICE_STATUSES) }),
  }),
  z.strictObject({ PutPaymentSession: z.strictObject({ payment_hash: hash, payment_session: z.unknown() }) }),
]);
