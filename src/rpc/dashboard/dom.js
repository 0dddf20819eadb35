// A tiny element builder. Text goes in as text nodes only: node names, descriptions and errors
// come from the network and must never be parsed as HTML.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

/**
 * Replaces a table's content. `columns`: [{ title, value(row), class?, title(row)? }]. An empty
 * list shows one row saying so.
 */
export function fillTable(table, columns, rows, empty = 'none') {
  const head = el(
    'thead',
    {},
    el(
      'tr',
      {},
      columns.map((c) => el('th', {}, c.title)),
    ),
  );
  const body = el(
    'tbody',
    {},
    rows.length === 0
      ? el('tr', {}, el('td', { colspan: columns.length }, empty))
      : rows.map((r) =>
          el(
            'tr',
            { 'data-key': r.key },
            columns.map((c) => el('td', { class: c.class?.(r), title: c.hover?.(r) }, c.value(r))),
          ),
        ),
  );
  table.replaceChildren(head, body);
}
