import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** Daily cost (left axis, USD) and tokens (right axis) drawn by uPlot; the table beside it carries the same data. */
export function DailyChart({
  days,
  cost,
  tokens,
  label,
}: {
  days: string[];
  cost: number[];
  tokens: number[];
  label: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const xs = days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000);
    const width = () => Math.max(280, element.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 220,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        scales: { x: { time: true }, usd: { auto: true }, tokens: { auto: true } },
        series: [
          {},
          {
            label: 'Cost (USD)',
            scale: 'usd',
            stroke: '#2457c5',
            width: 2,
            fill: 'rgba(36,87,197,0.08)',
            value: (_u, v) => (v == null ? '—' : `$${v.toFixed(4)}`),
          },
          { label: 'Tokens', scale: 'tokens', stroke: '#b3541e', width: 2, dash: [6, 4] },
        ],
        axes: [
          {},
          {
            scale: 'usd',
            // Wide enough for the longest tick label (costs of a few requests are fractions of a cent).
            size: (_u, values) => (values ? Math.max(...values.map((v) => v.length)) * 7 + 18 : 50),
            values: (_u, ticks) => ticks.map((t) => `$${t}`),
          },
          { scale: 'tokens', side: 1, grid: { show: false } },
        ],
      },
      [xs, cost, tokens],
      element,
    );
    const resize = () => plot.setSize({ width: width(), height: 220 });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.destroy();
    };
  }, [days, cost, tokens]);
  return <div ref={box} className="chart" role="img" aria-label={label} />;
}
