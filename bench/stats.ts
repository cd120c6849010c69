/** Small statistics the benchmarks share. */

/** The median: the middle value, or the mean of the two middle ones for an even count; NaN for none. */
export const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  const at = (i: number) => sorted[i] ?? Number.NaN
  return sorted.length % 2 === 1 ? at(middle) : (at(middle - 1) + at(middle)) / 2
}

/** The value at rank `q` (0–1) of `values` by nearest rank (no interpolation); NaN for none. */
export const nearestRank = (values: ReadonlyArray<number>, q: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.round(q * (sorted.length - 1))] ?? Number.NaN
}
