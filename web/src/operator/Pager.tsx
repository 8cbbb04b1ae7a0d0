/** Previous and next buttons over a server-paged list (`offset` of `total`, `pageSize` a page). */
export function Pager(props: {
  offset: number;
  pageSize: number;
  total: number;
  onChange: (offset: number) => void;
}) {
  return (
    <div className="pager">
      <button
        type="button"
        className="secondary"
        disabled={props.offset === 0}
        onClick={() => props.onChange(Math.max(0, props.offset - props.pageSize))}
      >
        Previous page
      </button>
      <button
        type="button"
        className="secondary"
        disabled={props.offset + props.pageSize >= props.total}
        onClick={() => props.onChange(props.offset + props.pageSize)}
      >
        Next page
      </button>
    </div>
  );
}
