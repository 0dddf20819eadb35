// The network graph as SVG: nodes on a circle (ordered by pubkey, so the picture is stable
// between refreshes), one line per channel; this node filled.
import { el } from './dom.js';
import { bare, ckb, short } from './format.js';

const NS = 'http://www.w3.org/2000/svg';
const svg = (tag, attrs, ...children) => {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
};

export function drawGraph(target, summary, nodes, channels, selfPubkey) {
  const keys = [
    ...new Set([
      ...nodes.map((n) => bare(n.pubkey)),
      ...channels.flatMap((c) => [bare(c.node1), bare(c.node2)]),
    ]),
  ].sort();
  const names = new Map(nodes.map((n) => [bare(n.pubkey), n.node_name]));
  const r = keys.length > 1 ? 230 : 0;
  const pos = new Map(
    keys.map((k, i) => {
      const a = (2 * Math.PI * i) / keys.length - Math.PI / 2;
      return [k, { x: 300 + r * Math.cos(a), y: 300 + r * Math.sin(a) }];
    }),
  );
  const lines = channels.map((c) => {
    const a = pos.get(bare(c.node1));
    const b = pos.get(bare(c.node2));
    return svg(
      'line',
      { x1: a.x, y1: a.y, x2: b.x, y2: b.y, 'stroke-width': 2, 'data-outpoint': c.channel_outpoint },
      svg('title', {}, `${ckb(c.capacity)} CKB`),
    );
  });
  const circles = keys.map((k) => {
    const p = pos.get(k);
    const label = names.get(k) || short(k, 6);
    return svg(
      'g',
      { 'data-pubkey': k },
      svg(
        'circle',
        { cx: p.x, cy: p.y, r: 16, class: k === bare(selfPubkey) ? 'self' : '' },
        svg('title', {}, k),
      ),
      svg('text', { x: p.x, y: p.y + 32, 'text-anchor': 'middle' }, label),
    );
  });
  target.replaceChildren(...lines, ...circles);
  summary.replaceChildren(
    el('span', {}, `${keys.length} nodes, ${channels.length} channels (graph_nodes, graph_channels)`),
  );
}
