/*
 * pipeline.c: the pass table and the driver that runs it.
 *
 * Passes run in table order.  After each one the driver runs the verifier of
 * the IR it produced and, when the dump option names it (or says "all"),
 * hands the printed IR to the dump callback.  A pass never verifies or prints
 * itself.  Each pass's contract (requires, leaves, breaks) is the first
 * lines of its file and the line above its entry point.
 */
#include <string.h>

#include "passes.h"

const Pass pass_table[] = {
	{"expand", pass_expand, WSF_STAGE_FUSION_IR},
	{"infer", pass_infer, WSF_STAGE_FUSION_IR},
	{"views", pass_views, WSF_STAGE_FUSION_IR},
	{"schedule", pass_schedule, WSF_STAGE_FUSION_IR},
	{"lower", pass_lower, WSF_STAGE_KERNEL_IR},
	{"circular_buffer", pass_circular_buffer, WSF_STAGE_KERNEL_IR},
	{"warp_specialize", pass_warp_specialize, WSF_STAGE_KERNEL_IR},
	{"sync", pass_sync, WSF_STAGE_KERNEL_IR},
};
const int pass_count = countof(pass_table);

/* Is NAME one of the comma-separated entries of LIST (or is LIST "all")? */
static int
list_has(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	if (strcmp(list, "all") == 0)
		return 1;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == n && strncmp(p, name, n) == 0)
			return 1;
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

int
passes_valid_dump_list(const char *list)
{
	const char *p = list;

	if (strcmp(list, "all") == 0)
		return 1;
	while (1) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		int i, ok = 0;

		for (i = 0; i < pass_count; i++)
			if (strlen(pass_table[i].name) == len && strncmp(p, pass_table[i].name, len) == 0)
				ok = 1;
		if (!ok)
			return 0;
		if (!e)
			return 1;
		p = e + 1;
	}
}

static void
dump(Comp *c, const Pass *p)
{
	Buf b;

	if (!c->dump || !c->dump_after || !list_has(c->dump_after, p->name))
		return;
	buf_init(&b, c->arena);
	if (p->stage == WSF_STAGE_FUSION_IR)
		fusion_print(&b, c->fusion);
	else
		kernel_print(&b, c->kernel);
	c->dump(c->dump_user, p->name, buf_str(&b));
}

/* Runs the passes that produce STOP's IR (fusion or kernel), after those already run. */
int
passes_run(Comp *c, WsfStage stop)
{
	int i;

	for (i = 0; i < pass_count; i++) {
		const Pass *p = &pass_table[i];

		if (p->stage != stop)
			continue;
		if (p->run(c))
			return -1;
		if (p->stage == WSF_STAGE_FUSION_IR ? fusion_verify(c, c->fusion, p->name)
		                                    : kernel_verify(c, c->kernel, p->name))
			return -1;
		dump(c, p);
	}
	return 0;
}
