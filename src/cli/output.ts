import { styleText } from 'node:util';
import { printable, printableJson, printableStyled } from './terminal-text.ts';

type Style = Parameters<typeof styleText>[0];

export interface Output {
  /** True under --json: commands print the gateway's JSON and nothing else on stdout. */
  json: boolean;
  /** Prints a value as one line of JSON (for scripts). */
  printJson(value: unknown): void;
  /** Prints `label: value` lines, labels aligned; null and undefined values print as "-". */
  printFields(fields: readonly (readonly [string, unknown])[]): void;
  /** Prints rows under a header, columns padded to their widest cell. */
  printTable(header: readonly string[], rows: readonly (readonly unknown[])[]): void;
  /** Prints the gateway's answer under --json, otherwise one line saying what was done. */
  result(answer: unknown, done: string): void;
  /** Prints a `{data: [...]}` answer: as it came under --json, otherwise a table of `row` per item. */
  list(
    answer: { data: Record<string, unknown>[] },
    header: readonly string[],
    row: (item: Record<string, unknown>) => readonly unknown[],
  ): void;
  /** Prints one line of text. */
  line(text?: string): void;
  /** Styles text for stdout: colour only on a terminal and never with NO_COLOR set. */
  style(format: Style, text: string): string;
}

/** The CLI's stdout: plain aligned text for people, JSON with --json; colour decided per stream by Node. */
export function createOutput(options: { json: boolean; stdout?: NodeJS.WriteStream }): Output {
  const stdout = options.stdout ?? process.stdout;
  const style = (format: Style, text: string): string => styleText(format, text, { stream: stdout });
  // Everything printed passes a filter for terminal controls: the gateway's strings are what tenants typed.
  const write = (text: string): void => void stdout.write(`${text}\n`);
  const line = (text = ''): void => write(printableStyled(text));
  const printJson = (value: unknown): void => write(printableJson(JSON.stringify(value, null, 2)));
  const output: Output = {
    json: options.json,
    printJson,
    printFields(fields) {
      const width = Math.max(0, ...fields.map(([label]) => label.length));
      for (const [label, value] of fields) write(`${style('bold', label.padEnd(width))}  ${cell(value)}`);
    },
    printTable(header, rows) {
      const cells = rows.map((row) => row.map(cell));
      const widths = header.map((title, i) =>
        Math.max(title.length, ...cells.map((row) => row[i]?.length ?? 0)),
      );
      const join = (row: readonly string[]): string =>
        row.map((text, i) => (i === row.length - 1 ? text : text.padEnd(widths[i] ?? 0))).join('  ');
      write(style('bold', join(header)));
      for (const row of cells) write(join(row));
    },
    result(answer, done) {
      if (options.json) printJson(answer);
      else write(printable(done));
    },
    list(answer, header, row) {
      if (options.json) printJson(answer);
      else output.printTable(header, answer.data.map(row));
    },
    line,
    style,
  };
  return output;
}

/** How one value reads in a table cell. */
function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (typeof value === 'string') return printable(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return printableJson(JSON.stringify(value));
}
