import cliProgress from "cli-progress";

// Progress of long work: a live bar on a terminal (rows, rows/s, ETA), and
// nothing but the caller's summary line otherwise (logs stay readable).

export interface Progress {
  update(rows: number, done: number): void;
  stop(): void;
}

/** `total` is in the same unit as `done` (bytes, rows...); 0 when unknown. */
export function progressBar(label: string, total: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update() {}, stop() {} };
  const started = Date.now();
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: total > 0 ? `${label} [{bar}] {percentage}% | {rows} rows | {rate} rows/s | ETA {eta_formatted}` : `${label} {rows} rows | {rate} rows/s`,
      hideCursor: true,
      etaBuffer: 50,
      fps: 5,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(Math.max(total, 1), 0, { rows: 0, rate: 0 });
  return {
    update(rows, done) {
      const seconds = (Date.now() - started) / 1000;
      bar.update(total > 0 ? Math.min(done, total) : 0, { rows, rate: seconds > 0 ? Math.round(rows / seconds) : 0 });
    },
    stop() {
      bar.stop();
    },
  };
}
