/* The product's test hooks: none (see test-hook.h). */
#include "test-hook.h"

void
test_hook_sandboxed(struct worker *w)
{
	(void)w;
}
