// noabi exports strand_invoke but not strand_abi_v1.
#include <stdint.h>
__attribute__((export_name("strand_invoke"))) int32_t strand_invoke(void) { return 0; }
