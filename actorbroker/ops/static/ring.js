// A fixed-size ring of timestamped samples: the charts' memory of the last minutes.

export class Ring {
  constructor(capacity) {
    this.capacity = capacity;
    this.times = [];
    this.rows = [];
  }

  push(time, row) {
    this.times.push(time);
    this.rows.push(row);
    if (this.times.length > this.capacity) {
      this.times.shift();
      this.rows.shift();
    }
  }

  get length() {
    return this.times.length;
  }

  last() {
    return this.rows.length ? this.rows[this.rows.length - 1] : null;
  }
}
