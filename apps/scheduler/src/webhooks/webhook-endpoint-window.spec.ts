import { EndpointWindow, FAILING_PACE_MS } from './webhook-endpoint-window';

const settings = { start: 4, max: 16, slowMs: 1000 };
const T0 = 1_800_000_000_000;

/** `n` attempts started at `at`, answered `latency` later, each `ok` or not; the time after. */
function round(w: EndpointWindow, n: number, at: number, latency: number, ok: boolean): number {
  const tickets = Array.from({ length: n }, () => w.started(at));
  for (const t of tickets) w.answered(t, ok, latency, at + latency);
  return at + latency;
}

describe('an endpoint window', () => {
  it('grows by its start per window of fast 2xx answers, up to its bound', () => {
    const w = new EndpointWindow({ ...settings, max: 18 }, false, T0);
    expect(w.limit).toBe(4);
    expect(w.room(T0)).toBe(4);
    let t = round(w, 3, T0, 5, true);
    expect(w.limit).toBe(4);
    t = round(w, 1, t, 5, true);
    expect(w.limit).toBe(8);
    t = round(w, 7, t, 5, true);
    expect(w.limit).toBe(8);
    t = round(w, 1, t, 5, true);
    expect(w.limit).toBe(12);
    for (let i = 0; i < 100; i++) t = round(w, w.limit, t, 5, true);
    expect(w.limit).toBe(18);
    // In flight counts against it.
    w.started(t);
    w.started(t);
    expect(w.room(t)).toBe(16);
  });

  it('halves on a failure, once for the attempts that were in flight together', () => {
    const w = new EndpointWindow({ ...settings, start: 16, max: 64 }, false, T0);
    // 16 in flight, all fail: one step down, not sixteen.
    let t = round(w, 16, T0, 5, false);
    expect(w.limit).toBe(8);
    expect(w.failing).toBe(true);
    // Paused after a failure, then the next round fails too: down again.
    expect(w.room(t)).toBe(0);
    expect(w.room(t + FAILING_PACE_MS)).toBe(8);
    t = round(w, 8, t + FAILING_PACE_MS, 5, false);
    expect(w.limit).toBe(4);
    t = round(w, 4, t + FAILING_PACE_MS, 5, false);
    t = round(w, 2, t + FAILING_PACE_MS, 5, false);
    expect(w.limit).toBe(1);
    // Down to one while failing, never none.
    t = round(w, 1, t + FAILING_PACE_MS, 5, false);
    expect(w.limit).toBe(1);
    expect(w.room(t + FAILING_PACE_MS)).toBe(1);
    // A success ends the streak and grows it again, additively (by its start, 16).
    t = round(w, 1, t + FAILING_PACE_MS, 5, true);
    expect(w.failing).toBe(false);
    expect(w.limit).toBe(17);
    expect(w.room(t)).toBe(17);
  });

  it('halves on a 2xx that came slowly, without pausing', () => {
    const w = new EndpointWindow({ ...settings, start: 8 }, false, T0);
    const t = round(w, 1, T0, settings.slowMs, true);
    expect(w.limit).toBe(4);
    expect(w.failing).toBe(false);
    expect(w.room(t)).toBe(4);
  });

  it('starts at one for an endpoint known to be failing', () => {
    const w = new EndpointWindow(settings, true, T0);
    expect(w.limit).toBe(1);
    expect(w.failing).toBe(true);
  });
});
