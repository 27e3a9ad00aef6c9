/**
 * bench/measure.ts: the timing procedure every engine of `bench compare` goes through. Interleaved,
 * round r runs pass r of every configuration, starting one later each round; warm-up rounds are
 * not recorded; a configuration whose pass fails is dropped and the others go on; a pass begins
 * with an untimed batch.
 */
import { describe, expect, it } from 'vitest';
import { type Pass, measureInterleaved, timePass } from '../../bench/measure.js';

/** A runner that logs its name at each pass and returns `ms` for its one batch and its pass number as the label. */
function runner(name: string, log: string[], ms: number, failAt = -1): () => Promise<Pass> {
  let passes = 0;
  return async () => {
    log.push(name);
    if (passes === failAt) throw new Error(`${name} broke`);
    return { batchMs: [ms], labels: new Int32Array([passes++]) };
  };
}

describe('measureInterleaved', () => {
  it('runs a pass of every configuration a round, each round starting one later; warm-up rounds unrecorded', async () => {
    const log: string[] = [];
    const out = await measureInterleaved([runner('a', log, 2), runner('b', log, 4), runner('c', log, 6)], { warmup: 1, repeats: 3, settleMs: 0 });
    expect(log.join('')).toBe('abc' + 'bca' + 'cab' + 'abc');
    for (const [i, m] of out.entries()) {
      if (m instanceof Error) throw m;
      expect(m.batchMs).toEqual([2, 2, 2].map((x) => x * (i + 1)));
      expect(m.passSeconds).toEqual([0.002, 0.002, 0.002].map((x) => x * (i + 1)));
      expect([...m.labels]).toEqual([3]); // the last timed pass's
    }
  });

  it('drops a configuration whose pass throws, tells onError once, and times the others to the end', async () => {
    const log: string[] = [];
    const errors: string[] = [];
    const rounds: number[] = [];
    const out = await measureInterleaved([runner('a', log, 1), runner('b', log, 1, 1), runner('c', log, 1)], {
      warmup: 0, repeats: 3, settleMs: 0,
      onError: (i, err) => errors.push(`${i}: ${err.message}`),
      onRound: (round) => rounds.push(round),
    });
    expect(log.join('')).toBe('abc' + 'bca' + 'ca');
    expect(errors).toEqual(['1: b broke']);
    expect(rounds).toEqual([1, 2, 3]);
    expect(out[1]).toBeInstanceOf(Error);
    expect((out[0] as { batchMs: number[] }).batchMs).toHaveLength(3);
    expect((out[2] as { batchMs: number[] }).batchMs).toHaveLength(3);
  });

  it('pauses before each pass', async () => {
    const starts: number[] = [];
    const pass = async (): Promise<Pass> => {
      starts.push(performance.now());
      return { batchMs: [1], labels: new Int32Array(0) };
    };
    await measureInterleaved([pass, pass], { warmup: 0, repeats: 2, settleMs: 30 });
    expect(starts).toHaveLength(4);
    // setTimeout may fire a millisecond early by performance.now(); never much more.
    for (let i = 1; i < 4; i++) expect(starts[i] - starts[i - 1]).toBeGreaterThanOrEqual(28);
  });
});

describe('timePass', () => {
  it('warm: searches the last full batch untimed, then all in batches, the last one smaller, and checks the labels returned', async () => {
    const calls: number[][] = [];
    const xq = Float32Array.from({ length: 7 * 3 }, (_, i) => i);
    const search = (q: Float32Array, nb: number) => {
      calls.push([nb, q[0] / 3]); // batch size, first query row
      expect(q.length).toBe(nb * 3);
      return new Float64Array(nb * 2).fill(calls.length);
    };
    const p = await timePass(search, xq, 7, 3, 2, 3, true);
    expect(calls).toEqual([[3, 4], [3, 0], [3, 3], [1, 6]]);
    expect(p.batchMs).toHaveLength(3);
    expect([...p.labels]).toEqual([2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4]);
    calls.length = 0;
    const cold = await timePass(search, xq, 7, 3, 2, 3, false);
    expect(calls).toEqual([[3, 0], [3, 3], [1, 6]]);
    expect([...cold.labels]).toEqual([1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3]);
    await expect(timePass((_xq, nb) => new Int32Array(nb), new Float32Array(4), 2, 2, 3, 2, true)).rejects.toThrow('returned 2 labels; expected 6');
  });
});
