// Argument checks for the labs' host APIs: bad input gets a clear std::invalid_argument
// naming the function, the argument and what is allowed, before any CUDA call is made.
#pragma once

namespace kit {

// Throws unless value >= 1. `where` names the function, e.g. "lab02::naive_matmul".
void require_positive(const char* where, const char* name, long long value);

// Throws unless ptr is not null.
void require_not_null(const char* where, const char* name, const void* ptr);

// Throws unless lo <= value <= hi.
void require_in_range(const char* where, const char* name, long long value, long long lo,
                      long long hi);

}  // namespace kit
