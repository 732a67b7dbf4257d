import { DAY, HOUR, type StoredSpan } from "../../domain/series.js";

// Stats in US dollars from the series (docs/money.md, "Stats in USD"): a
// window [since, until] (inclusive seconds) is its whole days, read as the
// series keep them, the whole hours at its ends, and the seconds at its
// edges (less than an hour each; a window holding no whole hour, under two
// hours, is read whole), read from the raw sales at their points.
// Each part's dollars are exact, so their sum is the window's, rounded once
// per marketplace as a sum of the sales one by one would be.

/** A window's parts: series intervals of a span with from <= bucket < to, and raw ranges from..to inclusive. */
export interface UsdWindowParts {
  kept: { span: StoredSpan; from: number; to: number }[];
  raw: { from: number; to: number }[];
}

export function usdWindowParts(since: number, until: number): UsdWindowParts {
  const firstHour = Math.ceil(since / HOUR) * HOUR;
  const hoursEnd = Math.floor((until + 1) / HOUR) * HOUR;
  if (firstHour >= hoursEnd) return { kept: [], raw: [{ from: since, to: until }] };
  const raw = [
    ...(since < firstHour ? [{ from: since, to: firstHour - 1 }] : []),
    ...(hoursEnd <= until ? [{ from: hoursEnd, to: until }] : []),
  ];
  const firstDay = Math.ceil(firstHour / DAY) * DAY;
  const daysEnd = Math.floor(hoursEnd / DAY) * DAY;
  if (firstDay >= daysEnd) return { kept: [{ span: HOUR, from: firstHour, to: hoursEnd }], raw };
  const kept = [
    { span: DAY as StoredSpan, from: firstDay, to: daysEnd },
    ...(firstHour < firstDay ? [{ span: HOUR as StoredSpan, from: firstHour, to: firstDay }] : []),
    ...(daysEnd < hoursEnd ? [{ span: HOUR as StoredSpan, from: daysEnd, to: hoursEnd }] : []),
  ];
  return { kept, raw };
}
