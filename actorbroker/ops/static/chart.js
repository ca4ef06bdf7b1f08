// A line chart on a canvas: several series over a sliding time window, drawn
// from a Ring of samples. Its legend is HTML and carries each series' latest
// value, so a reader (and a test) sees the figures without reading pixels.

const PAD = { left: 48, right: 8, top: 8, bottom: 20 };
const GAP_MS = 5000;   // samples further apart than this are not joined

// The smallest "round" number (1, 2, 5 times a power of ten) not below value.
function niceCeiling(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) {
    if (value <= step * power) return step * power;
  }
  return 10 * power;
}

export function formatNumber(value) {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  const abs = Math.abs(value);
  if (abs >= 1e6) return `${(value / 1e6).toFixed(1)}M`;
  if (abs >= 1e4) return `${(value / 1e3).toFixed(1)}k`;
  if (abs >= 100 || Number.isInteger(value)) return String(Math.round(value));
  return value.toFixed(abs >= 10 ? 1 : 2);
}

// The index of the value in xs closest to target.
function nearest(xs, target) {
  let best = 0;
  xs.forEach((value, i) => { if (Math.abs(value - target) < Math.abs(xs[best] - target)) best = i; });
  return best;
}

export class LineChart {
  // figure: the <figure> holding a .legend and a <canvas>;
  // series: [{key, label, color, dash}] (dash: a canvas line dash, for a line that may lie
  // on another); windowSeconds: how much history is shown.
  constructor(figure, series, windowSeconds) {
    this.figure = figure;
    this.canvas = figure.querySelector("canvas");
    this.series = series;
    this.windowSeconds = windowSeconds;
    this.values = new Map();
    const legend = figure.querySelector(".legend");
    for (const s of series) {
      const item = document.createElement("span");
      item.className = "series";
      item.dataset.key = s.key;
      item.style.setProperty("--color", s.color);
      item.innerHTML = `<i></i>${s.label} <b class="value">–</b>`;
      legend.append(item);
      this.values.set(s.key, item.querySelector(".value"));
    }
    this.at = document.createElement("span");
    this.at.className = "at";
    legend.append(this.at);
    // Pointing at the chart shows the sample under the pointer in the legend.
    this.hoverX = null;
    this.canvas.addEventListener("mousemove", (event) => { this.hoverX = event.offsetX; this.redraw(); });
    this.canvas.addEventListener("mouseleave", () => { this.hoverX = null; this.redraw(); });
  }

  redraw() {
    if (this.ring) this.draw(this.ring, this.now);
  }

  draw(ring, now) {
    this.ring = ring;
    this.now = now;
    const canvas = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth;
    const height = canvas.clientHeight;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
    }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);

    // The window grows with the history, from a minute to windowSeconds, so that a page
    // just opened draws across its width instead of in a sliver at the right.
    const history = ring.length ? (now - ring.times[0]) / 1000 : 0;
    const span = Math.min(this.windowSeconds, Math.max(60, Math.ceil(history / 60) * 60));
    const start = now - span * 1000;
    let top = 0;
    ring.rows.forEach((row, i) => {
      if (ring.times[i] < start) return;
      for (const s of this.series) {
        const v = row[s.key];
        if (Number.isFinite(v) && v > top) top = v;
      }
    });
    top = niceCeiling(top * 1.1);

    const plotW = width - PAD.left - PAD.right;
    const plotH = height - PAD.top - PAD.bottom;
    const x = (t) => PAD.left + ((t - start) / (now - start)) * plotW;
    const y = (v) => PAD.top + plotH - (v / top) * plotH;

    const style = getComputedStyle(this.figure);
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = style.getPropertyValue("--axis") || "#888";
    ctx.strokeStyle = style.getPropertyValue("--grid") || "#ddd";
    ctx.lineWidth = 1;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (let i = 0; i <= 4; i++) {
      const v = (top * i) / 4;
      const gy = Math.round(y(v)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(PAD.left, gy);
      ctx.lineTo(width - PAD.right, gy);
      ctx.stroke();
      ctx.fillText(formatNumber(v), PAD.left - 4, gy);
    }
    ctx.textBaseline = "top";
    const step = [10, 15, 30, 60, 120].find((seconds) => span / seconds <= 6) || 300;
    for (let ago = span; ago >= 0; ago -= step) {
      ctx.textAlign = ago === 0 ? "right" : ago === span ? "left" : "center";
      const label = ago === 0 ? "now" : ago % 60 ? `-${ago}s` : `-${ago / 60}m`;
      ctx.fillText(label, x(now - ago * 1000), height - PAD.bottom + 4);
    }

    ctx.lineWidth = 1.5;
    ctx.lineJoin = "round";
    for (const s of this.series) {
      ctx.strokeStyle = s.color;
      ctx.setLineDash(s.dash || []);
      ctx.beginPath();
      let pen = false;
      ring.rows.forEach((row, i) => {
        const v = row[s.key];
        // A gap in the data lifts the pen: no figure, a sample before the window, or
        // polls missed (a background tab's timers slowed, the broker unreachable).
        if (!Number.isFinite(v) || ring.times[i] < start) {
          pen = false;
          return;
        }
        if (i > 0 && ring.times[i] - ring.times[i - 1] > GAP_MS) pen = false;
        const px = x(ring.times[i]);
        const py = y(v);
        if (pen) ctx.lineTo(px, py);
        else ctx.moveTo(px, py);
        pen = true;
      });
      ctx.stroke();
    }
    ctx.setLineDash([]);

    let shown = ring.length - 1;
    if (this.hoverX !== null && ring.length) {
      shown = nearest(ring.times.map(x), this.hoverX);
      const gx = Math.round(x(ring.times[shown])) + 0.5;
      ctx.strokeStyle = style.getPropertyValue("--axis") || "#888";
      ctx.beginPath();
      ctx.moveTo(gx, PAD.top);
      ctx.lineTo(gx, height - PAD.bottom);
      ctx.stroke();
    }
    const row = ring.rows[shown] || {};
    for (const s of this.series) {
      this.values.get(s.key).textContent = formatNumber(row[s.key]);
    }
    const ago = shown >= 0 && shown < ring.length - 1 ? Math.round((now - ring.times[shown]) / 1000) : 0;
    this.at.textContent = ago ? `${ago} s ago` : "";
    this.figure.dataset.samples = String(ring.length);
  }
}
