import { type ReactNode, useId, useLayoutEffect, useRef } from 'react';
import { errorText } from './api.ts';

/** A form control with its visible label above it. */
export function Field(props: {
  label: string;
  type?: string;
  value: string;
  onChange: (value: string) => void;
  required?: boolean;
  autoComplete?: string;
  hint?: string;
  min?: number;
  step?: string;
  placeholder?: string;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      <input
        id={id}
        type={props.type ?? 'text'}
        value={props.value}
        onChange={(event) => props.onChange(event.target.value)}
        required={props.required ?? false}
        {...(props.autoComplete ? { autoComplete: props.autoComplete } : {})}
        {...(props.min !== undefined ? { min: props.min } : {})}
        {...(props.step ? { step: props.step } : {})}
        {...(props.placeholder ? { placeholder: props.placeholder } : {})}
        {...(props.hint ? { 'aria-describedby': `${id}-hint` } : {})}
      />
      {props.hint && (
        <p className="hint" id={`${id}-hint`}>
          {props.hint}
        </p>
      )}
    </div>
  );
}

/** An error from the server, announced to screen readers. */
export function ErrorMessage({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p className="error" role="alert">
      {errorText(error)}
    </p>
  );
}

/** A status line announced politely. */
export function Notice({ children }: { children: ReactNode }) {
  return (
    <p className="notice" role="status">
      {children}
    </p>
  );
}

export function Section({ title, children }: { title: string; children: ReactNode }) {
  const id = useId();
  return (
    <section className="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/**
 * Labels each body cell with its column's header (`data-label`), which the phone layout shows beside the value
 * when rows become cards. Runs before paint on every render, so rows that arrive later are labelled too.
 */
function useCellLabels(ref: { current: HTMLDivElement | null }): void {
  useLayoutEffect(() => {
    const table = ref.current?.querySelector('table');
    if (!table) return;
    const headers = [...table.querySelectorAll('thead th')].map((th) => th.textContent?.trim() ?? '');
    for (const row of table.querySelectorAll('tbody tr, tfoot tr')) {
      const cells = [...row.children];
      if (cells.length !== headers.length) continue;
      cells.forEach((cell, i) => cell.setAttribute('data-label', headers[i] ?? ''));
    }
  });
}

/**
 * A table in its card: at desktop widths it fits (cells wrap; the scroll is a last resort), at phone widths
 * each row becomes a card of labelled values.
 */
export function TableWrap({
  label,
  children,
  className,
}: {
  label: string;
  children: ReactNode;
  className?: string;
}) {
  const ref = useRef<HTMLDivElement | null>(null);
  useCellLabels(ref);
  return (
    <div
      ref={ref}
      className={className ? `table-wrap ${className}` : 'table-wrap'}
      role="region"
      aria-label={label}
      tabIndex={0}
    >
      {children}
    </div>
  );
}

/** Placeholder rows of the list's own height while it loads, so nothing moves when it arrives. */
export function SkeletonRows({ columns, rows }: { columns: number; rows: number }) {
  return (
    <>
      {Array.from({ length: rows }, (_, r) => (
        <tr key={r} className="skeleton-row" aria-hidden="true">
          {Array.from({ length: columns }, (_, c) => (
            <td key={c}>
              <span className="skeleton" />
            </td>
          ))}
        </tr>
      ))}
    </>
  );
}

/** A table's only row when it has nothing to list (shown once the list has loaded). */
export function EmptyRow({
  when,
  columns,
  children,
}: {
  when: boolean;
  columns: number;
  children: ReactNode;
}) {
  if (!when) return null;
  return (
    <tr>
      <td colSpan={columns}>{children}</td>
    </tr>
  );
}

/** A table under a header row of column names, scrolling inside its card at phone width. */
export function DataTable(props: { label: string; columns: readonly string[]; children: ReactNode }) {
  return (
    <TableWrap label={props.label}>
      <table>
        <thead>
          <tr>
            {props.columns.map((column) => (
              <th key={column} scope="col">
                {column}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </TableWrap>
  );
}

/**
 * The page's body once the data that shapes it has arrived; until then placeholder cards that hold the space,
 * so the page appears in one piece instead of growing under the pointer.
 */
export function Settled({
  pending,
  cards = 3,
  children,
}: {
  pending: boolean;
  cards?: number;
  children: ReactNode;
}) {
  if (!pending) return <>{children}</>;
  return (
    <div className="page-skeleton">
      <p role="status" className="sr-only">
        Loading…
      </p>
      {Array.from({ length: cards }, (_, i) => (
        <div key={i} className="card skeleton-card" aria-hidden="true">
          <span className="skeleton" />
          <span className="skeleton" />
          <span className="skeleton short" />
        </div>
      ))}
    </div>
  );
}
