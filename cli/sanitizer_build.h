// PIPEPLAN_ASAN is defined in AddressSanitizer builds (clang or GCC), where a
// program may set the sanitizer's default options.
#pragma once

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PIPEPLAN_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(PIPEPLAN_ASAN)
#define PIPEPLAN_ASAN 1
#endif
