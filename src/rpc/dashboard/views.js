// What each table shows. Every renderer takes the RPC results as they come and fills its table.
import { el, fillTable } from './dom.js';
import { bare, big, ckb, short, time } from './format.js';

export function renderNodeInfo(dl, info) {
  const rows = [
    ['name', info.node_name || '(none)'],
    ['pubkey', info.pubkey],
    ['version', info.version],
    ['addresses', (info.addresses ?? []).join(', ') || '(none)'],
    ['chain hash', info.chain_hash],
    ['channels', `${big(info.channel_count)} open, ${big(info.pending_channel_count)} pending`],
    ['peers', String(big(info.peers_count))],
    ['forwarding fee', `${big(info.tlc_fee_proportional_millionths)} ppm`],
  ];
  dl.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', { 'data-field': k }, v)]));
}

/** Totals over the CKB channels that are ready (token channels count in their own units). */
export function renderBalances(dl, channels) {
  const ready = channels.filter((c) => c.state.state_name === 'CHANNEL_READY' && !c.funding_udt_type_script);
  const sum = (f) => ready.reduce((a, c) => a + big(c[f]), 0n);
  const rows = [
    ['channels ready', String(ready.length)],
    ['local', `${ckb(sum('local_balance'))} CKB`],
    ['remote', `${ckb(sum('remote_balance'))} CKB`],
  ];
  dl.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', { 'data-field': k }, v)]));
}

export function renderPeers(table, peers, names) {
  fillTable(
    table,
    [
      { title: 'name', value: (p) => names.get(bare(p.pubkey)) ?? '' },
      { title: 'pubkey', value: (p) => p.pubkey, class: () => 'mono' },
      { title: 'address', value: (p) => p.address ?? '', class: () => 'mono' },
    ],
    peers.map((p) => ({ ...p, key: bare(p.pubkey) })),
    'no peers',
  );
}

export function renderChannels(table, channels, names) {
  const amount = (c, v) => (c.funding_udt_type_script ? `${big(v)} units` : `${ckb(v)} CKB`);
  fillTable(
    table,
    [
      {
        title: 'channel',
        value: (c) => short(c.channel_id),
        class: () => 'mono',
        hover: (c) => c.channel_id,
      },
      { title: 'peer', value: (c) => names.get(bare(c.pubkey)) ?? short(c.pubkey), hover: (c) => c.pubkey },
      { title: 'state', value: (c) => c.state.state_name, class: (c) => `status-${c.state.state_name}` },
      { title: 'local', value: (c) => amount(c, c.local_balance), class: () => 'num local' },
      { title: 'remote', value: (c) => amount(c, c.remote_balance), class: () => 'num remote' },
      {
        title: 'in flight',
        value: (c) => amount(c, big(c.offered_tlc_balance) + big(c.received_tlc_balance)),
        class: () => 'num',
      },
      { title: 'asset', value: (c) => (c.funding_udt_type_script ? 'UDT' : 'CKB') },
      { title: 'opened', value: (c) => time(c.created_at) },
    ],
    channels.map((c) => ({ ...c, key: c.channel_id })),
    'no channels',
  );
}

export function renderPayments(table, payments) {
  const sorted = [...payments].sort((a, b) => Number(big(b.created_at) - big(a.created_at)));
  fillTable(
    table,
    [
      {
        title: 'payment hash',
        value: (p) => short(p.payment_hash),
        class: () => 'mono',
        hover: (p) => p.payment_hash,
      },
      { title: 'status', value: (p) => p.status, class: (p) => `status-${p.status} payment-status` },
      { title: 'fee', value: (p) => `${ckb(p.fee)} CKB`, class: () => 'num' },
      { title: 'created', value: (p) => time(p.created_at) },
      { title: 'updated', value: (p) => time(p.last_updated_at) },
      { title: 'error', value: (p) => p.failed_error ?? '' },
    ],
    sorted.map((p) => ({ ...p, key: p.payment_hash })),
    'no payments',
  );
}

const description = (inv) =>
  (inv.data?.attrs ?? []).map((a) => a.Description ?? a.description).find((d) => d !== undefined) ?? '';

export function renderInvoices(table, invoices) {
  fillTable(
    table,
    [
      {
        title: 'payment hash',
        value: (i) => short(i.invoice.data.payment_hash),
        class: () => 'mono',
        hover: (i) => i.invoice.data.payment_hash,
      },
      { title: 'status', value: (i) => i.status, class: (i) => `status-${i.status} invoice-status` },
      {
        title: 'amount',
        value: (i) => (i.invoice.amount ? `${ckb(i.invoice.amount)} CKB` : 'any'),
        class: () => 'num',
      },
      { title: 'description', value: (i) => description(i.invoice) },
      {
        title: 'invoice',
        value: (i) => short(i.invoice_address, 14),
        class: () => 'mono',
        hover: (i) => i.invoice_address,
      },
    ],
    invoices.map((i) => ({ ...i, key: i.invoice.data.payment_hash })),
    'no invoices created or paid since this browser first opened the page',
  );
}
