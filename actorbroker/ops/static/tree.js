// The supervision tree as an SVG drawing: one row per actor, indented under its
// supervisor and joined to it by a line, with its mailbox size and restart
// counts in columns on the right. An actor whose restart count went up since
// the last poll (or that came back to life) flashes for FLASH_MS, and so does
// the supervisor that restarted it: a restarted child may be one not drawn, or
// one gone at once (a session whose client left).
//
// Nodes are /api/v1/tree's {name, path, kind, actor, mailbox, restarts, alive,
// children}, supervisors with restarts_total, children_total (the broker lists
// the busiest children of a large supervisor only) and busy.

const SVG = "http://www.w3.org/2000/svg";
const ROW = 22;
const INDENT = 18;
const SHOWN_CHILDREN = 12;   // a supervisor with more children shows this many, then "+N more"
const EXPANDED_LIMIT = 1000; // children asked for per supervisor once one is expanded
const FLASH_MS = 6000;

// A supervisor with no child and no restart, and not busy: nothing to see in it.
function idle(node) {
  return node.kind === "supervisor" && !node.busy && !node.children_total && !node.restarts
    && !node.restarts_total;
}

function el(name, attrs, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

export class TreeView {
  // onSelect(node): an actor was clicked; onExpand(): a supervisor's children are wanted.
  constructor(svg, onSelect, onExpand) {
    this.svg = svg;
    this.onSelect = onSelect;
    this.onExpand = onExpand;
    this.seen = new Map();        // path -> {restarts, total, alive} at the last poll
    this.flashing = new Map();    // path -> time its flash ends
    this.expanded = new Set();    // paths of supervisors shown with all their children
    this.selected = null;         // path of the actor shown in the details panel
    this.hideEmpty = true;        // idle supervisors counted, not drawn (see rows)
    this.root = null;
    this.nodes = new Map();       // path -> node, of the latest tree
  }

  // How many children per supervisor to ask the broker for: what is drawn (the
  // broker then lists the busiest), more once a supervisor was expanded.
  limit() {
    return this.expanded.size ? EXPANDED_LIMIT : SHOWN_CHILDREN;
  }

  // Whether the node restarted, or restarted a child, since the last poll.
  restarted(node, seen) {
    const before = this.seen.get(node.path);
    seen.set(node.path, { restarts: node.restarts, total: node.restarts_total, alive: node.alive });
    return before !== undefined && (node.restarts > before.restarts
      || (node.restarts_total || 0) > (before.total || 0) || (node.alive && !before.alive));
  }

  // Flatten the tree into rows, starting flashes, remembering every node by path.
  // With hideEmpty, supervisors without children and restarts (most shards of an
  // idle broker) are counted under their parent instead of drawn.
  rows(root, now) {
    const rows = [];
    const seen = new Map();   // only the actors of this tree: a long-open page does not grow
    this.nodes.clear();
    const visit = (node, depth, parent) => {
      this.nodes.set(node.path, node);
      if (this.restarted(node, seen)) this.flashing.set(node.path, now + FLASH_MS);
      const row = { node, depth, parent };
      rows.push(row);
      const listed = node.children || [];
      const children = this.hideEmpty ? listed.filter((child) => !idle(child)) : listed;
      const empty = listed.length - children.length;
      // Hidden, yet watched: one that restarts a child stops being idle and shows, flashing.
      listed.filter((child) => !children.includes(child)).forEach((child) => this.restarted(child, seen));
      const limit = this.expanded.has(node.path) ? children.length : SHOWN_CHILDREN;
      children.slice(0, limit).forEach((child) => visit(child, depth + 1, row));
      const hidden = children.length - Math.min(limit, children.length);
      const unlisted = (node.children_total || listed.length) - listed.length;
      if (hidden > 0 || unlisted > 0 || empty > 0) {
        rows.push({ hidden, unlisted, empty, path: node.path, depth: depth + 1, parent: row });
      }
    };
    visit(root, 0, null);
    this.seen = seen;
    for (const [path, until] of this.flashing) if (until <= now) this.flashing.delete(path);
    return rows;
  }

  update(root, now) {
    this.root = root;
    const rows = this.rows(root, now);
    const width = Math.max(this.svg.parentElement.clientWidth, 360);
    const colMailbox = width - 200;
    const colRestarts = width - 120;
    const colChildren = width - 20;
    const svg = this.svg;
    svg.replaceChildren();
    svg.setAttribute("width", width);
    svg.setAttribute("height", (rows.length + 1) * ROW);
    svg.append(
      el("text", { x: colMailbox, y: ROW * 0.7, class: "head" }, "mailbox"),
      el("text", { x: colRestarts, y: ROW * 0.7, class: "head" }, "restarts"),
      el("text", { x: colChildren, y: ROW * 0.7, class: "head" }, "its children's"),
    );
    const lines = el("g", { class: "links" });
    svg.append(lines);
    const maxMailbox = Math.max(1, ...rows.filter((r) => r.node).map((r) => r.node.mailbox || 0));
    rows.forEach((row, i) => {
      row.y = (i + 1) * ROW + ROW / 2;
      row.x = 10 + row.depth * INDENT;
      if (row.parent) {
        lines.append(el("path", { d: `M${row.parent.x} ${row.parent.y + 5} V${row.y} H${row.x - 6}` }));
      }
      if (row.node) svg.append(this.drawNode(row, now, width, [colMailbox, colRestarts, colChildren], maxMailbox));
      else svg.append(this.drawMore(row));
    });
    if (this.selected !== null) {
      this.onSelect(this.nodes.get(this.selected) || { path: this.selected, gone: true });
    }
  }

  drawNode(row, now, width, [colMailbox, colRestarts, colChildren], maxMailbox) {
    const { node } = row;
    const classes = ["node", node.kind, node.alive ? "alive" : "dead"];
    if (node.busy) classes.push("busy");
    if (this.flashing.has(node.path)) classes.push("flash");
    if (node.path === this.selected) classes.push("selected");
    const g = el("g", {
      class: classes.join(" "), "data-path": node.path, "data-name": node.name,
      "data-restarts": node.restarts, "data-mailbox": node.mailbox, role: "treeitem", tabindex: 0,
      "data-children-restarts": node.restarts_total ?? "",
    });
    const share = (node.mailbox || 0) / maxMailbox;
    // The actor's class follows its name in the same text, so it needs no measuring.
    const label = el("text", { x: row.x + 10, y: row.y + 4 });
    label.append(el("tspan", { class: "name" }, node.name), el("tspan", { class: "actor", dx: 8 },
      // A supervisor that did not answer in time is restarting its children: none known.
      node.busy ? `${node.actor} (busy restarting, children unknown)` : node.actor || ""));
    g.append(
      el("rect", { class: "band", x: 0, y: row.y - ROW / 2, width, height: ROW }),
      // A bar for the mailbox (square root: a few busy actors do not flatten the rest).
      el("rect", { class: "load", x: colMailbox - 100, y: row.y - 4, height: 8,
        width: node.mailbox ? Math.max(2, 50 * Math.sqrt(share)) : 0 }),
      el("circle", { cx: row.x, cy: row.y, r: 5 }),
      label,
      el("text", { x: colMailbox, y: row.y + 4, class: "mailbox" }, String(node.mailbox ?? "")),
      el("text", { x: colRestarts, y: row.y + 4, class: "restarts" }, String(node.restarts ?? "")),
      el("text", { x: colChildren, y: row.y + 4, class: "children-restarts" }, String(node.restarts_total ?? "")),
    );
    const select = () => {
      this.selected = node.path;
      this.onSelect(node);   // first: the details panel narrows the drawing
      this.update(this.root, Date.now());
    };
    g.addEventListener("click", select);
    g.addEventListener("keydown", (event) => { if (event.key === "Enter") select(); });
    return g;
  }

  drawMore(row) {
    // Children not drawn, or not listed by the broker (the quieter ones): one click
    // draws them all (the next poll asks for them).
    const more = row.hidden + row.unlisted;
    const expandable = more > 0 && !(this.expanded.has(row.path) && !row.hidden);
    const parts = [];
    if (expandable) parts.push(`+${more} more`);
    else if (row.unlisted) parts.push(`${row.unlisted} more not listed by the broker`);
    if (row.empty) parts.push(`${row.empty} empty supervisor${row.empty > 1 ? "s" : ""} hidden`);
    const text = el("text", { x: row.x, y: row.y + 4, class: expandable ? "more" : "unlisted",
      "data-parent": row.path }, parts.join(" · "));
    if (expandable) {
      text.addEventListener("click", () => {
        this.expanded.add(row.path);
        this.update(this.root, Date.now());
        this.onExpand();
      });
    }
    return text;
  }
}
