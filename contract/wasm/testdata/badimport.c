// badimport imports a function strand does not provide.
#include <stdint.h>
__attribute__((import_module("env"), import_name("now"))) int64_t now(void);
__attribute__((export_name("strand_abi_v1"))) void strand_abi_v1(void) {}
__attribute__((export_name("strand_invoke"))) int32_t strand_invoke(void) { return (int32_t)now(); }
