/** Renders rows as left-aligned columns separated by two spaces (podman's `ps` look). */
export function renderTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  legend = true,
): string {
  const all = legend ? [headers, ...rows] : rows;
  const widths = headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}
