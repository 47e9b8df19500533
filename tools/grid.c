/*
 * Aligned text tables of the subcommands that print one (replay,
 * verdicts): the cells are collected first so that each column is as wide
 * as its widest cell.
 */
#include "tools/tools.h"

#include <stdlib.h>
#include <string.h>

void tool_grid_init(struct tool_grid *g, size_t ncols, const char *align)
{
	memset(g, 0, sizeof(*g));
	LG_ASSERT(ncols <= TOOL_GRID_COLS_MAX && strlen(align) == ncols);
	g->ncols = ncols;
	g->align = align;
}

void tool_grid_row(struct tool_grid *g, const char *const *row)
{
	if (g->nrows == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 16;
		g->cells = lg_xrealloc(g->cells,
				       g->cap * g->ncols * sizeof(char *));
	}
	for (size_t c = 0; c < g->ncols; c++)
		g->cells[g->nrows * g->ncols + c] =
			lg_xstrdup(row[c] ? row[c] : "");
	g->nrows++;
}

int tool_grid_print(const struct tool_grid *g)
{
	size_t w[TOOL_GRID_COLS_MAX] = {0};
	char line[TOOL_GRID_COLS_MAX * (TOOL_CELL_MAX + 2) + 1];
	int werr = 0;

	for (size_t i = 0; i < g->nrows * g->ncols; i++) {
		size_t len = strlen(g->cells[i]);

		if (len > w[i % g->ncols])
			w[i % g->ncols] =
				len < TOOL_CELL_MAX ? len : TOOL_CELL_MAX;
	}
	for (size_t r = 0; r < g->nrows && werr == 0; r++) {
		size_t n = 0;

		for (size_t c = 0; c < g->ncols; c++) {
			const char *cell = g->cells[r * g->ncols + c];
			bool last = c + 1 == g->ncols;
			int width = last && g->align[c] == 'l' ? 0 : (int)w[c];

			n += (size_t)snprintf(
				line + n, sizeof(line) - n,
				g->align[c] == 'r' ? "%*.*s%s" : "%-*.*s%s",
				width, TOOL_CELL_MAX, cell, last ? "" : "  ");
		}
		werr = tool_puts(line);
	}
	return werr;
}

void tool_grid_release(struct tool_grid *g)
{
	for (size_t i = 0; i < g->nrows * g->ncols; i++)
		free(g->cells[i]);
	free(g->cells);
}
