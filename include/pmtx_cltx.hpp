/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmtx_cltx.hpp - optional C++11 wrapper for cache-line transactions: the
 * counterpart of the seed's [[NVM::transactional]] annotation (seed 003,
 * section 4). Header only. The protocol, its invariants (C1-C5) and the
 * platforms it relies on are described in pmtx_cltx.h; this is the same
 * layout and the same commit.
 *
 *   struct BoundedBuffer { ...; void add(char c); char peek() const; };
 *   pmtx::cltx<BoundedBuffer> *b = ...;   // 64-byte aligned, in a region
 *
 *   char c = (*b)->peek();       // const call: reads the valid half
 *   b->tx(r)->add('x');          // non-const call: one transaction
 *   b->update(r, [](BoundedBuffer &x) { x.add('y'); x.add('z'); });
 *
 * tx(r) returns a proxy that begins in its constructor and commits in its
 * destructor, at the end of the full expression: like the seed's around
 * advice (log, proceed, commit), every non-const call made through it runs
 * as one transaction. Non-const calls through the const operator-> do not
 * compile, so a modification cannot bypass the transaction. The proxy
 * cannot return the commit status; pass an int * to tx() to get it, or use
 * update(), which returns it. pmtx itself throws nothing; if the user's code
 * throws, update() and the proxy abort (the working half is ignored) and
 * the exception propagates.
 *
 * cltx<T> is trivial and standard-layout: it is never constructed, only
 * placed over zeroed or initialised persistent memory (pmtx_cltx.h C5).
 */
#ifndef PMTX_CLTX_HPP
#define PMTX_CLTX_HPP

#include <cstring>
#include <exception>
#include <type_traits>
#include <utility>

#include "pmtx_cltx.h"

namespace pmtx {

template <class T> class alignas(PMTX_CLTX_LINE) cltx {
	static_assert(sizeof(T) <= PMTX_CLTX_MAX,
	              "type too large for a cache-line transaction "
	              "(at most 31 bytes)");
	static_assert(std::is_trivially_copyable<T>::value,
	              "a cache-line transactional type must be trivially "
	              "copyable: begin copies it with memcpy");

	/* Raw halves, not T members, so T needs no default constructor and
	 * cltx<T> stays trivial. Index right after half 1, as in C. */
	alignas(PMTX_CLTX_HALF) unsigned char half_[2][PMTX_CLTX_HALF];

	static constexpr size_t ioff() { return PMTX_CLTX_HALF + sizeof(T); }
	unsigned char *bytes() { return &half_[0][0]; }
	const unsigned char *bytes() const { return &half_[0][0]; }
	unsigned valid_idx() const
	{
		static_assert(sizeof(cltx) == PMTX_CLTX_LINE &&
		                      alignof(cltx) == PMTX_CLTX_LINE,
		              "cltx<T> must be exactly one aligned line");
		return pmtx__cltx_valid_idx(bytes(), ioff());
	}

    public:
	class proxy {
		cltx *l_;
		pmtx_region *r_;
		int *status_;
		T *w_;
		int unwinding_; /* exceptions in flight at begin */

		static int uncaught()
		{
#if defined(__cpp_lib_uncaught_exceptions)
			return std::uncaught_exceptions();
#else
			return std::uncaught_exception() ? 1 : 0;
#endif
		}

	    public:
		proxy(cltx *l, pmtx_region *r, int *status)
			: l_(l), r_(r), status_(status), w_(l->begin()),
			  unwinding_(uncaught())
		{
		}
		proxy(const proxy &) = delete;
		proxy &operator=(const proxy &) = delete;
		proxy(proxy &&o) noexcept
			: l_(o.l_), r_(o.r_), status_(o.status_), w_(o.w_),
			  unwinding_(o.unwinding_)
		{
			o.l_ = nullptr;
		}
		~proxy()
		{
			if (!l_)
				return;
			if (uncaught() > unwinding_) {
				/* the call threw: do not commit half of it */
				l_->abort();
				return;
			}
			int rc = l_->commit(r_);
			if (status_)
				*status_ = rc;
		}
		T *operator->() const { return w_; }
		T &operator*() const { return *w_; }
	};

	/* The committed value. */
	const T &get() const
	{
		return *reinterpret_cast<const T *>(half_[valid_idx()]);
	}
	const T *operator->() const { return &get(); }
	const T &operator*() const { return get(); }

	/* Fresh line: see pmtx__cltx_init. */
	int init(pmtx_region *r, const T &initial)
	{
		return pmtx__cltx_init(r, bytes(), ioff(), &initial, sizeof(T));
	}

	/* The explicit protocol, for callers that want it. */
	T *begin()
	{
		unsigned v = valid_idx();
		std::memcpy(half_[v ^ 1u], half_[v], sizeof(T));
		return reinterpret_cast<T *>(half_[v ^ 1u]);
	}
	int commit(pmtx_region *r)
	{
		return pmtx__cltx_commit(r, bytes(), ioff(), sizeof(T));
	}
	void abort() {}

	/* One transaction: f(T &) on the working half, then commit. */
	template <class F> int update(pmtx_region *r, F &&f)
	{
		T *w = begin();
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
		try {
			std::forward<F>(f)(*w);
		} catch (...) {
			abort();
			throw;
		}
#else
		std::forward<F>(f)(*w);
#endif
		return commit(r);
	}

	/* A proxy whose every use is one transaction (see the top). */
	proxy tx(pmtx_region *r, int *status = nullptr)
	{
		return proxy(this, r, status);
	}
};

} // namespace pmtx

#endif /* PMTX_CLTX_HPP */
