import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { usd } from './format.ts';

export interface ChartSeries {
  label: string;
  /** Which scale: costs (USD), counts (requests, accounts) or tokens, dashed; each gets an axis of its own. */
  scale: 'usd' | 'tokens' | 'count';
  values: number[];
}

// Distinguishable on white, dark enough for text contrast in the legend.
const COLORS = ['#1d4ed8', '#b45309', '#047857', '#7c3aed', '#be123c', '#0e7490', '#4d7c0f', '#374151'];

// Tick steps for counts and tokens: whole numbers only (there is no half request).
const WHOLE_STEPS = Array.from({ length: 13 }, (_, power) => [1, 2, 5].map((m) => m * 10 ** power)).flat();

/** Values by UTC day drawn by uPlot: cost lines on the left axis (USD), token lines dashed on the right. */
export function DailyChart({
  days,
  series,
  label,
}: {
  days: string[];
  series: ChartSeries[];
  label: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const xs = days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000);
    const width = () => Math.max(280, element.clientWidth);
    // The first scale in use gets the left axis and the grid, the second the right axis; a third only the legend.
    const scales = (['usd', 'count', 'tokens'] as const).filter((scale) =>
      series.some((s) => s.scale === scale),
    );
    const plot = new uPlot(
      {
        width: width(),
        height: 220,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        scales: { x: { time: true }, usd: { auto: true }, count: { auto: true }, tokens: { auto: true } },
        series: [
          {},
          ...series.map((s, i) => ({
            label: s.label,
            scale: s.scale,
            stroke: COLORS[i % COLORS.length] ?? '#1d4ed8',
            width: 2,
            ...(s.scale === 'tokens' ? { dash: [6, 4] } : {}),
            value: (_u: uPlot, v: number | null) =>
              v == null ? '—' : s.scale === 'usd' ? usd(v) : v.toLocaleString(),
          })),
        ],
        axes: [
          {},
          ...scales.slice(0, 2).map((scale, i) => ({
            scale,
            side: i === 0 ? 3 : 1,
            grid: { show: i === 0 },
            // Wide enough for the longest tick label (costs of a few requests are fractions of a cent).
            size: (_u: uPlot, values: string[] | null) =>
              values ? Math.max(...values.map((v) => v.length)) * 7 + 18 : 50,
            ...(scale === 'usd'
              ? // uPlot's own tick text keeps the precision that tells neighbouring ticks apart.
                { values: (_u: uPlot, ticks: number[]) => ticks.map((t) => `USD ${t}`) }
              : { incrs: WHOLE_STEPS }),
          })),
        ],
      },
      [xs, ...series.map((s) => s.values)],
      element,
    );
    const resize = () => plot.setSize({ width: width(), height: 220 });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.destroy();
    };
  }, [days, series]);
  return <div ref={box} className="chart" role="img" aria-label={label} />;
}
