// A table of the API's rows with a search box: every column the rows have, the
// preferred ones first; a row is shown when any of its cells contains the
// search text (case-insensitive). A click on a column's head sorts by it
// (numbers as numbers), a second click the other way.

function cell(value) {
  if (value === null || value === undefined) return "";
  if (Array.isArray(value)) return value.map(cell).join(", ");
  if (typeof value === "object") return JSON.stringify(value);
  if (typeof value === "boolean") return value ? "yes" : "no";
  return String(value);
}

function compare(a, b) {
  if (typeof a === "number" && typeof b === "number") return a - b;
  return cell(a).localeCompare(cell(b), undefined, { numeric: true });
}

export class SearchTable {
  // panel: a section holding an input.search, a table and a .count; preferred: column order;
  // onPick(row), when given, is called with the row clicked (or chosen with Enter).
  constructor(panel, preferred, onPick = null) {
    this.onPick = onPick;
    this.panel = panel;
    this.preferred = preferred;
    this.input = panel.querySelector("input.search");
    this.head = panel.querySelector("thead");
    this.body = panel.querySelector("tbody");
    this.count = panel.querySelector(".count");
    this.rows = [];
    this.total = 0;
    this.columns = [];
    this.sortKey = null;     // the column sorted by, null: the API's order
    this.sortDown = false;
    if (this.input) this.input.addEventListener("input", () => this.render());
  }

  // rows: what the API listed; total: how many there are (the API lists a bounded number).
  set(rows, total) {
    this.rows = rows;
    this.total = total;
    const keys = new Set();
    for (const row of rows) for (const key of Object.keys(row)) keys.add(key);
    const columns = this.preferred.filter((key) => keys.has(key));
    for (const key of keys) if (!columns.includes(key)) columns.push(key);
    if (columns.join() !== this.columns.join()) {
      this.columns = columns;
      const tr = document.createElement("tr");
      for (const key of columns) {
        const th = document.createElement("th");
        th.textContent = key.replaceAll("_", " ");
        th.dataset.key = key;
        th.dataset.sort = key === this.sortKey ? (this.sortDown ? "down" : "up") : "";
        th.addEventListener("click", () => this.sortBy(key));
        tr.append(th);
      }
      this.head.replaceChildren(tr);
    }
    this.render();
  }

  sortBy(key) {
    this.sortDown = this.sortKey === key ? !this.sortDown : false;
    this.sortKey = key;
    for (const th of this.head.querySelectorAll("th")) {
      th.dataset.sort = th.dataset.key === key ? (this.sortDown ? "down" : "up") : "";
    }
    this.render();
  }

  ordered() {
    if (this.sortKey === null) return this.rows;
    const key = this.sortKey;
    const sign = this.sortDown ? -1 : 1;
    return [...this.rows].sort((a, b) => sign * compare(a[key], b[key]));
  }

  render() {
    const query = this.input ? this.input.value.trim().toLowerCase() : "";
    const body = [];
    let shown = 0;
    for (const row of this.ordered()) {
      const texts = this.columns.map((key) => cell(row[key]));
      if (query && !texts.some((text) => text.toLowerCase().includes(query))) continue;
      shown += 1;
      const tr = document.createElement("tr");
      if (this.onPick) {
        tr.tabIndex = 0;
        tr.className = "pick";
        tr.addEventListener("click", () => this.onPick(row));
        tr.addEventListener("keydown", (event) => { if (event.key === "Enter") this.onPick(row); });
      }
      texts.forEach((text) => {
        const td = document.createElement("td");
        td.textContent = text;
        td.title = text;
        tr.append(td);
      });
      body.push(tr);
    }
    this.body.replaceChildren(...body);
    const listed = this.total > this.rows.length ? `${this.rows.length} listed of ${this.total}`
      : String(this.rows.length);
    this.count.textContent = query ? `${shown} of ${listed}` : listed;
    this.panel.dataset.shown = String(shown);
  }
}
