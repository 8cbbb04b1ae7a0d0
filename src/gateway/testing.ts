import type { TextSink } from './stream-sink.ts';

/** A text sink for unit tests that keeps each write as text (`writes`), and all of them joined (`text()`). */
export function recordingSink(): TextSink & { writes: string[]; text: () => string } {
  const writes: string[] = [];
  return {
    writes,
    text: () => writes.join(''),
    open() {},
    write(data) {
      writes.push(data.toString());
      return true;
    },
    drain: () => Promise.resolve(),
    end() {},
    closed: false,
    onClose() {},
  };
}
