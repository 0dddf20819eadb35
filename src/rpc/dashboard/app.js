// The dashboard: loads what the node knows, keeps it fresh (store_changes pushes payments and
// invoices as they change; peers, channels and the graph, which have no event, are polled), and
// turns the forms into RPC calls. Everything goes through the node's JSON-RPC.
import { bare, ckbToHex } from './format.js';
import { drawGraph } from './graph.js';
import { createRpc, UNAUTHORIZED } from './rpc.js';
import {
  renderBalances,
  renderChannels,
  renderInvoices,
  renderNodeInfo,
  renderPayments,
  renderPeers,
} from './views.js';

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'strand.dashboard.token';
const POLL_MS = 3000;
/** Genesis hashes of CKB mainnet and testnet: the invoice currency follows the node's chain. */
const CURRENCY = {
  '0x92b197aa1fba0f63633922c61c92375c9c074a93e85963554f5499fe1450d0e5': 'Fibb',
  '0x10639e0895502b5688a6be8cf69460d76541bfa4821629d86d62ba0aae3f9606': 'Fibt',
};

const rpc = createRpc(() => sessionStorage.getItem(TOKEN_KEY));
const state = { info: null, live: false, names: new Map(), payments: new Map(), invoices: new Map() };

function notify(text, isError = false) {
  const p = $('notice');
  p.textContent = text;
  p.className = isError ? 'error' : '';
  p.hidden = false;
}

/** Invoices have no list method: the page remembers the hashes it has seen, per node. */
const invoiceKey = () => `strand.dashboard.invoices.${state.info.pubkey}`;
const knownInvoiceHashes = () => JSON.parse(localStorage.getItem(invoiceKey()) ?? '[]');
function rememberInvoice(hash) {
  const hashes = knownInvoiceHashes();
  if (!hashes.includes(hash))
    localStorage.setItem(invoiceKey(), JSON.stringify([...hashes, hash].slice(-200)));
}

async function refreshInfo() {
  state.info = await rpc.call('node_info');
  $('node-name').textContent = state.info.node_name || '';
  renderNodeInfo($('node-info'), state.info);
}

async function refreshPeersChannelsGraph() {
  const [{ peers }, { channels }, graph, edges] = await Promise.all([
    rpc.call('list_peers'),
    rpc.call('list_channels', {}),
    rpc.call('graph_nodes', {}),
    rpc.call('graph_channels', {}),
  ]);
  state.names = new Map(graph.nodes.map((n) => [bare(n.pubkey), n.node_name]));
  renderPeers($('peers-table'), peers, state.names);
  renderChannels($('channels-table'), channels, state.names);
  renderBalances($('balances'), channels);
  drawGraph($('graph-svg'), $('graph-summary'), graph.nodes, edges.channels, state.info.pubkey);
}

/** Every payment, page by page (the list is in hash order; the table sorts by time). */
async function refreshPayments() {
  let after;
  for (let pages = 0; pages < 20; pages++) {
    const { payments, last_cursor } = await rpc.call(
      'list_payments',
      after ? { limit: '0x64', after } : { limit: '0x64' },
    );
    for (const p of payments) state.payments.set(p.payment_hash, p);
    if (payments.length < 100 || !last_cursor) break;
    after = last_cursor;
  }
  renderPayments($('payments-table'), [...state.payments.values()]);
}

async function refreshInvoice(hash) {
  try {
    state.invoices.set(hash, await rpc.call('get_invoice', { payment_hash: hash }));
  } catch {
    // An invoice this node does not hold (a hash seen elsewhere): nothing to show.
  }
}

async function refreshInvoices() {
  await Promise.all(knownInvoiceHashes().map(refreshInvoice));
  renderInvoices($('invoices-table'), [...state.invoices.values()]);
}

async function onStoreChange(change) {
  if (change.PutPaymentSession) {
    const hash = change.PutPaymentSession.payment_hash;
    state.payments.set(hash, await rpc.call('get_payment', { payment_hash: hash }));
    renderPayments($('payments-table'), [...state.payments.values()]);
  } else if (change.PutCkbInvoiceStatus) {
    const hash = change.PutCkbInvoiceStatus.payment_hash;
    rememberInvoice(hash);
    await refreshInvoice(hash);
    renderInvoices($('invoices-table'), [...state.invoices.values()]);
  }
}

/** A form's submit: disables the button while the call runs, reports the outcome. */
function onSubmit(id, action) {
  const form = $(id);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      notify(await action(new FormData(form)));
      form.reset();
    } catch (e) {
      notify(e.message, true);
    } finally {
      button.disabled = false;
    }
  });
}

function wireForms() {
  onSubmit('connect-form', async (f) => {
    await rpc.call('connect_peer', { address: String(f.get('address')).trim() });
    await refreshPeersChannelsGraph();
    return 'peer connected';
  });
  onSubmit('open-form', async (f) => {
    const { temporary_channel_id } = await rpc.call('open_channel', {
      pubkey: String(f.get('pubkey')).trim(),
      funding_amount: ckbToHex(f.get('funding')),
      public: f.get('public') === 'on',
    });
    await refreshPeersChannelsGraph();
    return `channel opening (temporary id ${temporary_channel_id})`;
  });
  onSubmit('invoice-form', async (f) => {
    const description = String(f.get('description') ?? '').trim();
    const { invoice_address, invoice } = await rpc.call('new_invoice', {
      amount: ckbToHex(f.get('amount')),
      currency: CURRENCY[state.info.chain_hash] ?? 'Fibd',
      ...(description ? { description } : {}),
    });
    rememberInvoice(invoice.data.payment_hash);
    await refreshInvoices();
    const out = $('new-invoice');
    out.textContent = invoice_address;
    out.hidden = false;
    return 'invoice created';
  });
  onSubmit('pay-form', async (f) => {
    const payment = await rpc.call('send_payment', { invoice: String(f.get('invoice')).trim() });
    state.payments.set(payment.payment_hash, payment);
    renderPayments($('payments-table'), [...state.payments.values()]);
    return `payment ${payment.payment_hash} ${payment.status}`;
  });
}

function wireNav() {
  for (const button of document.querySelectorAll('nav button')) {
    button.addEventListener('click', () => {
      for (const b of document.querySelectorAll('nav button')) b.classList.toggle('active', b === button);
      for (const s of document.querySelectorAll('section.view')) s.hidden = s.id !== button.dataset.view;
    });
  }
}

function askForToken() {
  $('token-view').hidden = false;
  document.querySelector('main').hidden = true;
  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, String(new FormData(ev.target).get('token')).trim());
    location.reload();
  });
}

async function start() {
  wireNav();
  try {
    await refreshInfo();
  } catch (e) {
    if (e.code === UNAUTHORIZED) {
      if (sessionStorage.getItem(TOKEN_KEY)) notify('the token was refused', true);
      askForToken();
      return;
    }
    notify(`node_info failed: ${e.message}`, true);
    return;
  }
  wireForms();
  rpc.subscribe(
    (change) => onStoreChange(change).catch((e) => notify(e.message, true)),
    (on) => {
      state.live = on;
      $('live').textContent = on ? 'live' : 'offline';
      $('live').className = `badge ${on ? 'on' : 'off'}`;
    },
  );
  await Promise.all([refreshPeersChannelsGraph(), refreshPayments(), refreshInvoices()]);
  document.body.dataset.ready = 'true';
  setInterval(() => {
    // Without the subscription (pubsub module off, link down) payments and invoices are polled too.
    const lists = state.live ? [] : [refreshPayments(), refreshInvoices()];
    Promise.all([refreshInfo(), refreshPeersChannelsGraph(), ...lists]).catch((e) => notify(e.message, true));
  }, POLL_MS);
}

start();
