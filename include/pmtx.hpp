/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmtx.hpp - C++17 interface to pmtx: RAII regions and transactions,
 * typed persistent pointers and typed crash-safe containers, over the C
 * API of pmtx.h and pmtx_containers.h. Header only: it adds no symbol to
 * libpmtx. Its guide, with a libpmemobj-cpp program and the same program
 * written with this header side by side, is docs/cpp.md.
 *
 *   struct root {
 *       pmtx::p<uint64_t> counter;
 *       pmtx::persistent<pmtx::map<std::string, uint64_t>> seen;
 *   };
 *   pmtx::options o;
 *   o.layout = "counter";
 *   o.root_size = sizeof(root);
 *   auto r = pmtx::region::open_or_create("/dev/shm/c.pmtx", 64 << 20, o);
 *   root *rt = r.root<root>();
 *   auto seen = rt->seen.open_or_create(r);
 *   pmtx::transaction::run(r, [&] {
 *       rt->counter = rt->counter + 1;  // both change, or neither
 *       seen.insert_or_assign("hello", rt->counter);
 *   });
 *
 * Errors. Every failure of the C API becomes a pmtx::error (a
 * std::runtime_error carrying the status, pmtx_strerror's text and, for
 * region open/create, pmtx_errmsg's detail). Outcomes that are answers,
 * not failures, are return values: a key that is absent (std::optional,
 * false), a key that exists for insert (false). pmtx itself never throws
 * and never uses setjmp: exceptions exist only in this header.
 *
 * Transactions. pmtx::transaction begins in its constructor and, at the
 * end of its scope, commits, or aborts if an exception is leaving the
 * scope (std::uncaught_exceptions). Transactions nest flat, as in pmtx.h:
 * an inner scope joins the outer one, only the outermost commit makes the
 * whole durable, and an abort anywhere aborts the whole (the outer scope's
 * commit then throws pmtx::error PMTX_E_ABORTED). Every operation of this
 * header runs in the transaction that this thread runs in the same region
 * if there is one (it reads what that transaction sees, its own writes
 * included, under every runtime), else in a transaction of its own,
 * durable when it returns. A container operation that fails after it has
 * written (the heap full) aborts the whole transaction (pmtx_containers.h),
 * and throws.
 *
 * What lives in the region, and how. Persistent memory holds offsets,
 * never addresses. These types are the persistent representations; each
 * is trivial (all-zero bytes are its initial state: null, empty, 0), so a
 * root or any block allocated zeroed starts valid:
 *   pmtx::p<T>              a T field; assignment goes through the running
 *                           transaction (pmtx_write), reads see its writes
 *   pmtx::ptr<T>            a typed offset (8 bytes)
 *   pmtx::persistent<C>     a container C: its offset (8 bytes); for
 *                           pmtx::string the 16-byte pmtx_str itself
 * The container classes (hash_map, map, list, string) are volatile
 * handles: open one from its persistent<C> (or offset) and a region; a
 * handle is move-only and closes itself.
 *
 * Types. Containers hold trivially copyable types and std::string (a
 * static_assert says so otherwise), copied in and out as bytes. A hash
 * map's key must have unique object representations (no padding, not a
 * floating-point type: equal keys must be equal bytes). An ordered map's
 * key type chooses the C key kind: std::uint64_t (any 8-byte unsigned
 * integer) PMTX_MAP_U64, std::int64_t PMTX_MAP_I64, std::string
 * PMTX_MAP_BYTES, pmtx::score_key (a double, then a string)
 * PMTX_MAP_SCORE. A value type of 8 bytes, trivially copyable, is kept in
 * the leaf (PMTX_MAP_VAL_U64); other values are byte strings. The C API
 * cannot tell which kind a map was created with: open a map with the
 * types it was created with.
 *
 * Threads: as in pmtx.h, transactions do not isolate threads; a handle is
 * used by one thread at a time unless the caller serialises its users.
 */
#ifndef PMTX_HPP
#define PMTX_HPP

#if __cplusplus < 201703L
#error "pmtx.hpp needs C++17"
#endif

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iterator>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "pmtx.h"
#include "pmtx_containers.h"

namespace pmtx {

/* ------------------------------------------------------------------------
 * Errors.
 * ---------------------------------------------------------------------- */

/* A failure of the C API: status() is its status (a PMTX_E_* code or an
 * errno value); what() names the call, pmtx_strerror's text and, where
 * there is one, pmtx_errmsg's detail. */
class error : public std::runtime_error {
    public:
	error(int status, const std::string &where, const std::string &detail = "")
		: std::runtime_error(text(status, where, detail)), status_(status)
	{
	}
	int status() const noexcept { return status_; }

    private:
	static std::string text(int status, const std::string &where,
	                        const std::string &detail)
	{
		std::string s = where + ": " + pmtx_strerror(status);
		if (!detail.empty())
			s += " (" + detail + ")";
		return s;
	}
	int status_;
};

namespace detail {

inline void check(int rc, const char *where)
{
	if (rc)
		throw error(rc, where);
}

/* The transaction this thread runs in region r, or null. */
inline pmtx_tx *tx_in(pmtx_region *r) noexcept
{
	pmtx_tx *t = pmtx_tx_current();
	return t && pmtx_tx_region(t) == r ? t : nullptr;
}

/* The transaction this thread runs, whose region holds p; or null. */
inline pmtx_tx *tx_holding(const void *p) noexcept
{
	pmtx_tx *t = pmtx_tx_current();
	return t && pmtx_off_of(pmtx_tx_region(t), p) ? t : nullptr;
}

inline pmtx_tx *running_tx(const char *where)
{
	pmtx_tx *t = pmtx_tx_current();
	if (!t)
		throw error(PMTX_E_NO_TX, where);
	return t;
}

template <class> inline constexpr bool dependent_false = false;

} // namespace detail

/* ------------------------------------------------------------------------
 * Regions.
 * ---------------------------------------------------------------------- */

/* pmtx_options with its defaults (pmtx_options_init) already set. */
struct options : pmtx_options {
	options() noexcept { pmtx_options_init(this); }
};

/* An open region: closed by the destructor (its status ignored; call
 * close() to see it). Move-only. */
class region {
    public:
	region() noexcept = default;
	/* Adopt a handle opened with the C API. */
	explicit region(pmtx_region *r) noexcept : r_(r) {}
	region(region &&o) noexcept : r_(o.r_) { o.r_ = nullptr; }
	region &operator=(region &&o) noexcept
	{
		if (this != &o) {
			reset();
			r_ = o.r_;
			o.r_ = nullptr;
		}
		return *this;
	}
	region(const region &) = delete;
	region &operator=(const region &) = delete;
	~region() { reset(); }

	/* pmtx_create: a new region file (EEXIST if there is one). */
	static region create(const std::string &path, size_t size,
	                     const pmtx_options &o)
	{
		pmtx_region *r = nullptr;
		int rc = pmtx_create(path.c_str(), size, &o, &r);
		if (rc)
			throw error(rc, "pmtx_create " + path, pmtx_errmsg());
		return region(r);
	}
	/* pmtx_open: open and recover (o null: the defaults). */
	static region open(const std::string &path,
	                   const pmtx_options *o = nullptr)
	{
		pmtx_region *r = nullptr;
		int rc = pmtx_open(path.c_str(), o, &r);
		if (rc)
			throw error(rc, "pmtx_open " + path, pmtx_errmsg());
		return region(r);
	}
	static region open(const std::string &path, const pmtx_options &o)
	{
		return open(path, &o);
	}
	/* Open path, or create it if there is no such file. */
	static region open_or_create(const std::string &path, size_t size,
	                             const pmtx_options &o)
	{
		for (;;) {
			pmtx_region *r = nullptr;
			int rc = pmtx_open(path.c_str(), &o, &r);
			if (rc != ENOENT) {
				if (rc)
					throw error(rc, "pmtx_open " + path,
					            pmtx_errmsg());
				return region(r);
			}
			rc = pmtx_create(path.c_str(), size, &o, &r);
			if (rc != EEXIST) { /* EEXIST: made meanwhile; open it */
				if (rc)
					throw error(rc, "pmtx_create " + path,
					            pmtx_errmsg());
				return region(r);
			}
		}
	}

	/* pmtx_close. PMTX_E_TX_STATE (a transaction of the region still
	 * runs) leaves the region open; after any other status it is
	 * closed. */
	void close()
	{
		if (!r_)
			return;
		int rc = pmtx_close(r_);
		if (rc != PMTX_E_TX_STATE)
			r_ = nullptr;
		detail::check(rc, "pmtx_close");
	}
	void drain() { detail::check(pmtx_drain(get()), "pmtx_drain"); }

	pmtx_region *get() const noexcept { return r_; }
	explicit operator bool() const noexcept { return r_ != nullptr; }

	/* The root object as a T: PMTX_E_TOO_SMALL if the region's root is
	 * smaller. It starts zeroed at create. */
	template <class T> T *root() const
	{
		static_assert(alignof(T) <= 16, "root type over-aligned");
		size_t n = 0;
		void *p = pmtx_root(r_, &n);
		if (n < sizeof(T))
			throw error(PMTX_E_TOO_SMALL, "pmtx::region::root");
		return static_cast<T *>(p);
	}
	size_t root_size() const noexcept
	{
		size_t n = 0;
		pmtx_root(r_, &n);
		return n;
	}
	void *ptr(pmtx_off off) const noexcept { return pmtx_ptr(r_, off); }
	pmtx_off off_of(const void *p) const noexcept
	{
		return pmtx_off_of(r_, p);
	}

    private:
	void reset() noexcept
	{
		if (r_)
			(void)pmtx_close(r_);
		r_ = nullptr;
	}
	pmtx_region *r_ = nullptr;
};

/* ------------------------------------------------------------------------
 * Transactions.
 * ---------------------------------------------------------------------- */

/* A transaction scope (see the top): begins in the constructor; at the end
 * of the scope commits, or aborts if an exception is leaving it. A commit
 * that fails there throws from the destructor (as libpmemobj-cpp's
 * transaction::automatic does); call commit() to commit earlier. Neither
 * copyable nor movable. Under PMTX_RT_AUTO the call site that chooses the
 * runtime is where pmtx_begin is called: this constructor, inlined into
 * the caller in an optimised build. */
class transaction {
    public:
	explicit transaction(region &r, pmtx_runtime rt = PMTX_RT_DEFAULT)
		: transaction(r.get(), rt)
	{
	}
	explicit transaction(pmtx_region *r, pmtx_runtime rt = PMTX_RT_DEFAULT)
		: unwinding_(std::uncaught_exceptions())
	{
		detail::check(pmtx_begin(r, rt, &tx_), "pmtx_begin");
	}
	transaction(const transaction &) = delete;
	transaction &operator=(const transaction &) = delete;
	~transaction() noexcept(false)
	{
		pmtx_tx *t = tx_;
		if (!t)
			return;
		tx_ = nullptr;
		if (std::uncaught_exceptions() > unwinding_) {
			(void)pmtx_abort(t);
			return;
		}
		detail::check(pmtx_commit(t), "pmtx_commit");
	}

	/* End this level now: commit (durable when it returns, if this is
	 * the outermost level), or abort the whole transaction. */
	void commit()
	{
		detail::check(pmtx_commit(take()), "pmtx_commit");
	}
	void abort() { detail::check(pmtx_abort(take()), "pmtx_abort"); }

	pmtx_tx *get() const noexcept { return tx_; }
	pmtx_region *region_handle() const noexcept
	{
		return tx_ ? pmtx_tx_region(tx_) : nullptr;
	}

	/* Write a plain field of a persistent object through the
	 * transaction (p<T> fields do this themselves). */
	template <class T> void set(T &dst, const T &v)
	{
		static_assert(std::is_trivially_copyable_v<T>,
		              "set writes bytes: T must be trivially copyable");
		write(&dst, &v, sizeof(T));
	}
	void write(void *dst, const void *src, size_t n)
	{
		detail::check(pmtx_write(live(), dst, src, n), "pmtx_write");
	}
	/* A plain field as this transaction sees it. */
	template <class T> T read(const T &src) const
	{
		static_assert(std::is_trivially_copyable_v<T>,
		              "read copies bytes: T must be trivially copyable");
		T v;
		detail::check(pmtx_read(live(), &v, &src, sizeof(T)),
		              "pmtx_read");
		return v;
	}

	/* f() or f(transaction &) in a transaction of r: committed when f
	 * returns (f's value is returned), aborted if f throws (the
	 * exception goes on). */
	template <class F>
	static auto run(region &r, F &&f, pmtx_runtime rt = PMTX_RT_DEFAULT)
	{
		transaction tx(r, rt);
		if constexpr (std::is_invocable_v<F, transaction &>) {
			using R = std::invoke_result_t<F, transaction &>;
			if constexpr (std::is_void_v<R>) {
				std::forward<F>(f)(tx);
				tx.commit();
			} else {
				R v = std::forward<F>(f)(tx);
				tx.commit();
				return v;
			}
		} else {
			using R = std::invoke_result_t<F>;
			if constexpr (std::is_void_v<R>) {
				std::forward<F>(f)();
				tx.commit();
			} else {
				R v = std::forward<F>(f)();
				tx.commit();
				return v;
			}
		}
	}

    private:
	pmtx_tx *live() const
	{
		if (!tx_)
			throw error(PMTX_E_NO_TX, "pmtx::transaction (ended)");
		return tx_;
	}
	pmtx_tx *take()
	{
		pmtx_tx *t = live();
		tx_ = nullptr;
		return t;
	}
	pmtx_tx *tx_ = nullptr;
	int unwinding_;
};

/* ------------------------------------------------------------------------
 * Persistent fields and pointers.
 * ---------------------------------------------------------------------- */

/* A field of a persistent object (libpmemobj-cpp's p<T>). Reading gives
 * the value as the running transaction sees it; assigning writes through
 * that transaction, and outside one throws PMTX_E_NO_TX (a plain store
 * would not be crash-safe). Trivial to construct: zeroed memory holds a
 * zero. */
template <class T> class p {
	static_assert(std::is_trivially_copyable_v<T>,
	              "pmtx::p<T> holds a trivially copyable T");

    public:
	p() noexcept = default;
	p(const T &v) noexcept : v_(v) {} /* construction: a fresh object */
	p(const p &) noexcept = default;
	p &operator=(const p &o) { return *this = o.get(); }
	p &operator=(const T &v)
	{
		pmtx_tx *t = detail::tx_holding(&v_);
		if (!t)
			throw error(PMTX_E_NO_TX, "pmtx::p<T> assigned outside "
			                          "a transaction of its region");
		detail::check(pmtx_write(t, &v_, &v, sizeof(T)), "pmtx_write");
		return *this;
	}
	operator T() const { return get(); }
	T get() const
	{
		pmtx_tx *t = detail::tx_holding(&v_);
		if (!t)
			return v_;
		T out;
		detail::check(pmtx_read(t, &out, &v_, sizeof(T)), "pmtx_read");
		return out;
	}
	template <class U> p &operator+=(const U &d) { return *this = get() + d; }
	template <class U> p &operator-=(const U &d) { return *this = get() - d; }
	p &operator++() { return *this = get() + 1; }
	p &operator--() { return *this = get() - 1; }
	/* For p<ptr<U>>: the pointer's -> (see ptr). */
	auto operator->() const { return get().operator->(); }

    private:
	T v_;
};

/* A typed persistent pointer: an offset in the region (0 is null), never
 * an address; 8 bytes, trivially copyable, so it can be stored anywhere in
 * a region and in containers. get(r) gives the address in region r;
 * operator-> and operator* resolve it in the region of the transaction
 * this thread runs (outside one they throw PMTX_E_NO_TX: use get(r)). */
template <class T> class ptr {
    public:
	using element_type = T;
	ptr() noexcept = default;
	ptr(std::nullptr_t) noexcept {}
	explicit ptr(pmtx_off off) noexcept : off_(off) {}
	/* The pointer to an object of region r (null if p is outside r). */
	static ptr of(const region &r, const T *p) noexcept
	{
		return ptr(pmtx_off_of(r.get(), p));
	}

	pmtx_off off() const noexcept { return off_; }
	explicit operator bool() const noexcept { return off_ != 0; }
	T *get(const region &r) const noexcept { return get(r.get()); }
	T *get(pmtx_region *r) const noexcept
	{
		return static_cast<T *>(pmtx_ptr(r, off_));
	}
	T *operator->() const { return deref(); }
	T &operator*() const { return *deref(); }

	friend bool operator==(ptr a, ptr b) noexcept { return a.off_ == b.off_; }
	friend bool operator!=(ptr a, ptr b) noexcept { return a.off_ != b.off_; }

    private:
	T *deref() const
	{
		pmtx_tx *t = detail::running_tx("pmtx::ptr<T> dereferenced");
		T *p = get(pmtx_tx_region(t));
		if (!p)
			throw error(PMTX_E_RANGE, "pmtx::ptr<T> dereferenced");
		return p;
	}
	pmtx_off off_ = 0;
};

/* A new T in the heap of the running transaction's region, constructed
 * with args (libpmemobj-cpp's make_persistent). Freed again if the
 * transaction aborts. T is trivially destructible: pmtx runs no
 * destructors. Its constructor stores in place (the block is fresh, then
 * flushed: durable at commit); later changes go through p<T> fields or
 * transaction::set. */
template <class T, class... A> ptr<T> make(A &&...args)
{
	static_assert(std::is_trivially_destructible_v<T>,
	              "pmtx::make: T must be trivially destructible");
	static_assert(alignof(T) <= 16, "pmtx::make: T over-aligned");
	pmtx_tx *t = detail::running_tx("pmtx::make");
	pmtx_off off = 0;
	detail::check(pmtx_alloc(t, sizeof(T), &off), "pmtx_alloc");
	pmtx_region *r = pmtx_tx_region(t);
	void *mem = pmtx_ptr(r, off);
	new (mem) T(std::forward<A>(args)...);
	pmtx_flush(r, mem, sizeof(T));
	return ptr<T>(off);
}

/* n zeroed T's (an array), in the running transaction. */
template <class T> ptr<T> allocate(size_t n = 1)
{
	static_assert(std::is_trivially_copyable_v<T>,
	              "pmtx::allocate: T must be trivially copyable");
	static_assert(alignof(T) <= 16, "pmtx::allocate: T over-aligned");
	if (n == 0 || n > SIZE_MAX / sizeof(T))
		throw error(PMTX_E_INVAL, "pmtx::allocate");
	pmtx_off off = 0;
	detail::check(pmtx_zalloc(detail::running_tx("pmtx::allocate"),
	                          n * sizeof(T), &off),
	              "pmtx_zalloc");
	return ptr<T>(off);
}

/* Free what make or allocate made, when the running transaction commits
 * (libpmemobj-cpp's delete_persistent). Null: nothing. */
template <class T> void destroy(ptr<T> p)
{
	static_assert(std::is_trivially_destructible_v<T>,
	              "pmtx::destroy: T must be trivially destructible");
	if (p)
		detail::check(pmtx_free(detail::running_tx("pmtx::destroy"),
		                        p.off()),
		              "pmtx_free");
}

/* ------------------------------------------------------------------------
 * Containers: typing.
 * ---------------------------------------------------------------------- */

/* A key of a sorted set (PMTX_MAP_SCORE): by score, then by member's
 * bytes. NaN is refused by the map (PMTX_E_INVAL); -0.0 equals 0.0. */
struct score_key {
	double score = 0;
	std::string member;

	friend bool operator<(const score_key &a, const score_key &b)
	{
		return a.score < b.score ||
		       (a.score == b.score && a.member < b.member);
	}
	friend bool operator==(const score_key &a, const score_key &b)
	{
		return a.score == b.score && a.member == b.member;
	}
	friend bool operator!=(const score_key &a, const score_key &b)
	{
		return !(a == b);
	}
};

namespace detail {

/* Bytes of a value to hand to the C API. */
struct enc {
	const void *p;
	size_t n;
};

/* Trivially copyable types and std::string, as bytes. */
template <class T> struct codec {
	static_assert(std::is_trivially_copyable_v<T> &&
	                      std::is_default_constructible_v<T>,
	              "pmtx containers hold trivially copyable types (with a "
	              "default constructor) and std::string");
	static enc encode(const T &v, std::string &) { return {&v, sizeof(T)}; }
	static T decode(const void *p, size_t n)
	{
		if (n != sizeof(T))
			throw error(PMTX_E_CORRUPT, "pmtx: a stored value's size "
			                            "is not its type's");
		T v{};
		std::memcpy(static_cast<void *>(&v), p, sizeof(T));
		return v;
	}
	static T decode(const pmtx_bytes &b) { return decode(b.p, b.n); }
};

template <> struct codec<std::string> {
	static enc encode(const std::string &v, std::string &)
	{
		return {v.data(), v.size()};
	}
	static std::string decode(const void *p, size_t n)
	{
		return std::string(static_cast<const char *>(p), n);
	}
	static std::string decode(const pmtx_bytes &b) { return decode(b.p, b.n); }
};

template <> struct codec<score_key> {
	static enc encode(const score_key &v, std::string &buf)
	{
		buf.assign(reinterpret_cast<const char *>(&v.score),
		           sizeof(double));
		buf += v.member;
		return {buf.data(), buf.size()};
	}
	static score_key decode(const void *p, size_t n)
	{
		if (n < sizeof(double))
			throw error(PMTX_E_CORRUPT, "pmtx: a score key shorter "
			                            "than its score");
		score_key k;
		std::memcpy(&k.score, p, sizeof(double));
		k.member.assign(static_cast<const char *>(p) + sizeof(double),
		                n - sizeof(double));
		return k;
	}
	static score_key decode(const pmtx_bytes &b) { return decode(b.p, b.n); }
};

/* The ordered map's key kind for K. */
template <class K> constexpr unsigned map_kind()
{
	if constexpr (std::is_same_v<K, std::string>)
		return PMTX_MAP_BYTES;
	else if constexpr (std::is_same_v<K, score_key>)
		return PMTX_MAP_SCORE;
	else if constexpr (std::is_integral_v<K> && sizeof(K) == 8 &&
	                   std::is_unsigned_v<K>)
		return PMTX_MAP_U64;
	else if constexpr (std::is_integral_v<K> && sizeof(K) == 8 &&
	                   std::is_signed_v<K>)
		return PMTX_MAP_I64;
	else
		static_assert(dependent_false<K>,
		              "pmtx::map keys: std::uint64_t, std::int64_t, "
		              "std::string or pmtx::score_key");
	return 0;
}

/* Values kept in the leaf: 8 bytes, trivially copyable. */
template <class V> constexpr bool val_u64()
{
	if constexpr (std::is_same_v<V, std::string>)
		return false;
	else
		return std::is_trivially_copyable_v<V> && sizeof(V) == 8;
}

/* Callbacks called from C must not let an exception through C frames:
 * it is kept here, the walk stopped, and rethrown after. */
template <class F> struct walk {
	F *f;
	std::exception_ptr ex;
};

} // namespace detail

/* The persistent representation of a container C: its offset (see the
 * top). Trivial; zeroed memory holds a null one. Lives in the region (the
 * root, any block), and is written through a transaction. */
template <class C> class persistent {
    public:
	pmtx_off off() const noexcept { return off_; }
	explicit operator bool() const noexcept { return off_ != 0; }
	/* A handle on the container (o: pmtx_cont_options, or null). */
	C open(region &r, const pmtx_cont_options *o = nullptr) const
	{
		return C(r, read(r), o);
	}
	/* Create the container if this is null (in r's running transaction,
	 * or one of its own), then open it. flags: C's create flags
	 * (PMTX_HMAP_LOCKED for a hash map). */
	C open_or_create(region &r, unsigned flags = 0,
	                 const pmtx_cont_options *o = nullptr)
	{
		transaction tx(r);
		pmtx_off off = tx.read(off_);
		if (!off) {
			off = C::create(r, flags);
			tx.set(off_, off);
		}
		tx.commit();
		return C(r, off, o);
	}
	/* Free the container and make this null (one transaction). */
	void destroy(region &r)
	{
		transaction tx(r);
		pmtx_off off = tx.read(off_);
		if (off) {
			C::destroy(r, off);
			tx.set(off_, pmtx_off(0));
		}
		tx.commit();
	}

    private:
	pmtx_off read(region &r) const
	{
		pmtx_tx *t = detail::tx_in(r.get());
		if (!t)
			return off_;
		pmtx_off off;
		detail::check(pmtx_read(t, &off, &off_, sizeof off), "pmtx_read");
		return off;
	}
	pmtx_off off_;
};

/* ------------------------------------------------------------------------
 * What the two maps share: detail::keyed, over either one's C API.
 * ---------------------------------------------------------------------- */
namespace detail {

/* check(rc, where) for a call whose name is prefix + verb, made only
 * when there is an error to report. */
inline void check(int rc, const char *prefix, const char *verb)
{
	if (rc)
		throw error(rc, std::string(prefix) + verb);
}

/* A container's C API, H its handle type (pmtx_hmap's, pmtx_map's,
 * pmtx_list's; null for a verb it does not have here), and the names its
 * errors give (c: the C functions' prefix; cpp: the class). */
template <class H> struct api {
	const char *c, *cpp;
	int (*open)(pmtx_region *, pmtx_off, const pmtx_cont_options *, H **);
	void (*close)(H *);
	pmtx_off (*off)(const H *);
	int (*create)(pmtx_tx *, unsigned, pmtx_off *);
	int (*destroy)(pmtx_tx *, pmtx_off);
	int (*put)(pmtx_tx *, H *, const void *, size_t, const void *, size_t,
	           unsigned, int *);
	int (*get)(pmtx_tx *, H *, const void *, size_t, pmtx_bytes *);
	int (*del)(pmtx_tx *, H *, const void *, size_t);
	int (*len)(pmtx_tx *, H *, uint64_t *);
	int (*clear)(pmtx_tx *, H *);
};

inline constexpr api<pmtx_hmap> hmap_api{
	"pmtx_hmap", "pmtx::hash_map", pmtx_hmap_open, pmtx_hmap_close,
	pmtx_hmap_off, pmtx_hmap_create, pmtx_hmap_destroy, pmtx_hmap_put,
	pmtx_hmap_get, pmtx_hmap_del, pmtx_hmap_len, pmtx_hmap_clear};
inline constexpr api<pmtx_map> map_api{
	"pmtx_map", "pmtx::map", pmtx_map_open, pmtx_map_close, pmtx_map_off,
	pmtx_map_create, pmtx_map_destroy, pmtx_map_put, pmtx_map_get,
	pmtx_map_del, pmtx_map_len, pmtx_map_clear};
/* (pmtx_list_create takes no flags.) */
inline constexpr api<pmtx_list> list_api{
	"pmtx_list", "pmtx::list", pmtx_list_open, pmtx_list_close,
	pmtx_list_off,
	[](pmtx_tx *tx, unsigned, pmtx_off *off) {
		return pmtx_list_create(tx, off);
	},
	pmtx_list_destroy, nullptr, nullptr, nullptr, pmtx_list_len, nullptr};

/* A container's handle (move-only, closed by its destructor), over its
 * C API A of handle type H; each operation runs in the transaction this
 * thread runs in the region, if there is one (tx()). */
template <class H, const api<H> &A> class holder {
    public:
	holder() noexcept = default;
	/* Open the container at off (o: pmtx_cont_options, or null; stripes
	 * for a hash map created PMTX_HMAP_LOCKED). */
	holder(region &r, pmtx_off off, const pmtx_cont_options *o = nullptr)
		: r_(r.get())
	{
		check(A.open(r_, off, o, &m_), A.c, "_open");
	}
	holder(holder &&o) noexcept : r_(o.r_), m_(o.m_) { o.m_ = nullptr; }
	holder &operator=(holder &&o) noexcept
	{
		std::swap(r_, o.r_);
		std::swap(m_, o.m_);
		return *this;
	}
	~holder()
	{
		if (m_)
			A.close(m_);
	}

	static void destroy(region &r, pmtx_off off)
	{
		transaction tx(r);
		check(A.destroy(tx.get(), off), A.c, "_destroy");
		tx.commit();
	}

	H *handle() const noexcept { return m_; }
	pmtx_off off() const noexcept { return A.off(m_); }

    protected:
	/* A new container (in r's running transaction, or one of its own),
	 * flags passed to the C create. */
	static pmtx_off make(region &r, unsigned flags)
	{
		transaction tx(r);
		pmtx_off off = 0;
		check(A.create(tx.get(), flags, &off), A.c, "_create");
		tx.commit();
		return off;
	}
	pmtx_tx *tx() const noexcept { return tx_in(r_); }

	pmtx_region *r_ = nullptr;
	H *m_ = nullptr;
};

/* The verbs both maps have, over their handles. */
template <class H, const api<H> &A, class K, class V>
class keyed : public holder<H, A> {
	using kc = codec<K>;
	using vc = codec<V>;

    protected:
	using base = holder<H, A>;
	using base::m_;
	using base::tx;

    public:
	using key_type = K;
	using mapped_type = V;
	using base::base;

	/* Insert if absent: true if inserted, false if present (unchanged). */
	bool insert(const K &k, const V &v) { return put(k, v, PMTX_HMAP_NX); }
	/* Set: true if inserted, false if an old value was replaced. */
	bool insert_or_assign(const K &k, const V &v) { return put(k, v, 0); }
	/* Replace if present: true if replaced, false if absent. */
	bool assign(const K &k, const V &v)
	{
		return !put(k, v, PMTX_HMAP_XX);
	}
	std::optional<V> get(const K &k) const
	{
		std::string kb;
		enc e = kc::encode(k, kb);
		pmtx_bytes v;
		int rc = A.get(tx(), m_, e.p, e.n, &v);
		if (rc == PMTX_E_NOT_FOUND)
			return std::nullopt;
		check(rc, A.c, "_get");
		return vc::decode(v);
	}
	/* The value of k: PMTX_E_NOT_FOUND if absent. */
	V at(const K &k) const
	{
		std::optional<V> v = get(k);
		if (!v)
			throw error(PMTX_E_NOT_FOUND,
			            std::string(A.cpp) + "::at");
		return *std::move(v);
	}
	bool contains(const K &k) const { return get(k).has_value(); }
	/* Remove k: true if it was there. */
	bool erase(const K &k)
	{
		std::string kb;
		enc e = kc::encode(k, kb);
		int rc = A.del(tx(), m_, e.p, e.n);
		if (rc == PMTX_E_NOT_FOUND)
			return false;
		check(rc, A.c, "_del");
		return true;
	}
	uint64_t size() const
	{
		uint64_t n = 0;
		check(A.len(tx(), m_, &n), A.c, "_len");
		return n;
	}
	bool empty() const { return size() == 0; }
	void clear() { check(A.clear(tx(), m_), A.c, "_clear"); }

    private:
	/* NX: true if inserted; XX: false if replaced; 0: true if new. */
	bool put(const K &k, const V &v, unsigned flags)
	{
		std::string kb, vb;
		enc ke = kc::encode(k, kb), ve = vc::encode(v, vb);
		int existed = 0;
		int rc = A.put(tx(), m_, ke.p, ke.n, ve.p, ve.n, flags,
		               &existed);
		if (rc == PMTX_E_EXISTS)
			return false;
		if (rc == PMTX_E_NOT_FOUND && flags == PMTX_HMAP_XX)
			return true;
		check(rc, A.c, "_put");
		return !existed;
	}
};

} // namespace detail

/* ------------------------------------------------------------------------
 * hash_map<K, V>: pmtx_hmap (libpmemobj-cpp's concurrent_hash_map, but
 * every operation joins the caller's transaction).
 * ---------------------------------------------------------------------- */
template <class K, class V>
class hash_map : public detail::keyed<pmtx_hmap, detail::hmap_api, K, V> {
	static_assert(std::is_same_v<K, std::string> ||
	                      std::has_unique_object_representations_v<K>,
	              "pmtx::hash_map keys are compared as bytes: a key type "
	              "with padding or a floating-point key cannot be used");
	using base = detail::keyed<pmtx_hmap, detail::hmap_api, K, V>;
	using kc = detail::codec<K>;
	using vc = detail::codec<V>;

    public:
	/* Open the map at off (o: stripes for PMTX_HMAP_LOCKED maps). */
	using base::base;

	/* A new map (in r's running transaction, or one of its own; flags:
	 * PMTX_HMAP_LOCKED or 0). */
	static pmtx_off create(region &r, unsigned flags = 0)
	{
		return base::make(r, flags);
	}

	/* f(const K &, const V &) for every entry, in no order (a whole
	 * pmtx_hmap_scan; f must not write the map). */
	template <class F> void for_each(F &&f) const
	{
		using Fn = std::remove_reference_t<F>;
		detail::walk<Fn> w{&f, nullptr};
		uint64_t cursor = 0;
		do {
			uint64_t next = 0;
			int rc = pmtx_hmap_scan(this->tx(), this->m_, cursor, 64,
			                        entry<Fn>, &w, &next);
			if (w.ex)
				std::rethrow_exception(w.ex);
			detail::check(rc, "pmtx_hmap_scan");
			cursor = next;
		} while (cursor);
	}

    private:
	template <class F>
	static int entry(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
	{
		auto *w = static_cast<detail::walk<F> *>(arg);
		try {
			(*w->f)(kc::decode(*k), vc::decode(*v));
			return 0;
		} catch (...) {
			w->ex = std::current_exception();
			return 1;
		}
	}
};

/* ------------------------------------------------------------------------
 * map<K, V>: pmtx_map, an ordered map with ranks.
 * ---------------------------------------------------------------------- */
template <class K, class V>
class map : public detail::keyed<pmtx_map, detail::map_api, K, V> {
	using base = detail::keyed<pmtx_map, detail::map_api, K, V>;
	using kc = detail::codec<K>;
	using vc = detail::codec<V>;
	using base::m_;
	using base::tx;

    public:
	using value_type = std::pair<K, V>;
	/* pmtx_map_create's kind for these types. */
	static constexpr unsigned kind =
		detail::map_kind<K>() | (detail::val_u64<V>() ? PMTX_MAP_VAL_U64
		                                              : 0u);

	/* A position (pmtx_map_cursor): valid until the map is next written.
	 * end() is the position past either end. Dereferencing gives the
	 * entry by value (a copy out of the map). */
	class iterator {
	    public:
		using iterator_category = std::input_iterator_tag;
		using value_type = std::pair<K, V>;
		using difference_type = std::ptrdiff_t;
		using reference = value_type;
		struct arrow {
			value_type v;
			const value_type *operator->() const { return &v; }
		};
		using pointer = arrow;

		iterator() noexcept { c_.valid = 0; }
		K key() const
		{
			return with_bytes([](const pmtx_bytes &k, const pmtx_bytes &) {
				return kc::decode(k);
			});
		}
		V value() const
		{
			return with_bytes([](const pmtx_bytes &, const pmtx_bytes &v) {
				return vc::decode(v);
			});
		}
		/* How many keys are below this one. */
		uint64_t rank() const { return c_.rank; }
		value_type operator*() const
		{
			return with_bytes([](const pmtx_bytes &k, const pmtx_bytes &v) {
				return value_type(kc::decode(k), vc::decode(v));
			});
		}
		arrow operator->() const { return arrow{**this}; }
		iterator &operator++()
		{
			step(pmtx_map_next(&c_));
			return *this;
		}
		iterator operator++(int)
		{
			iterator old = *this;
			++*this;
			return old;
		}
		/* From end(), the last entry. */
		iterator &operator--()
		{
			if (c_.valid)
				step(pmtx_map_prev(&c_));
			else
				*this = m_->last();
			return *this;
		}
		friend bool operator==(const iterator &a, const iterator &b)
		{
			if (!a.c_.valid || !b.c_.valid)
				return a.c_.valid == b.c_.valid;
			return a.c_.leaf == b.c_.leaf && a.c_.pos == b.c_.pos;
		}
		friend bool operator!=(const iterator &a, const iterator &b)
		{
			return !(a == b);
		}

	    private:
		friend class map;
		/* f(key, value) on the entry's views. A view is not copied:
		 * an inline one points into itself (pmtx_bytes.inl). */
		template <class F> auto with_bytes(F f) const
		{
			if (!c_.valid)
				throw error(PMTX_E_NOT_FOUND,
				            "pmtx::map::iterator (end)");
			pmtx_bytes k, v;
			detail::check(pmtx_map_cursor_get(&c_, &k, &v),
			              "pmtx_map_cursor_get");
			return f(k, v);
		}
		void step(int rc)
		{
			if (rc == PMTX_E_NOT_FOUND)
				c_.valid = 0;
			else
				detail::check(rc, "pmtx_map_next");
		}
		const map *m_ = nullptr;
		pmtx_map_cursor c_{};
	};
	using const_iterator = iterator;

	/* Open the map at off (o: pmtx_cont_options, or null). */
	using base::base;

	/* A new map of this key and value type (flags: unused, 0). */
	static pmtx_off create(region &r, unsigned flags = 0)
	{
		return base::make(r, kind | flags);
	}
	/* How many keys are below k (at most k if inclusive), k present or
	 * not. */
	uint64_t rank(const K &k, bool inclusive = false) const
	{
		std::string kb;
		detail::enc e = kc::encode(k, kb);
		uint64_t n = 0;
		detail::check(pmtx_map_rank(tx(), m_, e.p, e.n,
		                            inclusive ? PMTX_MAP_INCL : 0u, &n),
		              "pmtx_map_rank");
		return n;
	}
	/* Keys in [lo, hi] (nullopt: unbounded; flags PMTX_MAP_LO_EXCL,
	 * PMTX_MAP_HI_EXCL make a bound exclusive). */
	uint64_t count(const std::optional<K> &lo, const std::optional<K> &hi,
	               unsigned flags = 0) const
	{
		std::string lb, hb;
		detail::enc l{nullptr, 0}, h{nullptr, 0};
		if (lo)
			l = kc::encode(*lo, lb);
		if (hi)
			h = kc::encode(*hi, hb);
		uint64_t n = 0;
		detail::check(pmtx_map_count(tx(), m_, lo ? l.p : nullptr, l.n,
		                             hi ? h.p : nullptr, h.n, flags, &n),
		              "pmtx_map_count");
		return n;
	}

	iterator begin() const { return seek_to(PMTX_SEEK_FIRST, nullptr); }
	iterator end() const
	{
		iterator it;
		it.m_ = this;
		return it;
	}
	/* The last entry (end() if empty). */
	iterator last() const { return seek_to(PMTX_SEEK_LAST, nullptr); }
	/* The first key >= k, > k; the entry of k (end() if absent). */
	iterator lower_bound(const K &k) const { return seek_to(PMTX_SEEK_GE, &k); }
	iterator upper_bound(const K &k) const { return seek_to(PMTX_SEEK_GT, &k); }
	iterator find(const K &k) const
	{
		iterator it = lower_bound(k);
		return it != end() && it.key() == k ? it : end();
	}
	/* pmtx_map_seek with how = PMTX_SEEK_*. */
	iterator seek(int how, const K &k) const { return seek_to(how, &k); }
	/* The entry of rank r (0: the smallest; end() past the last). */
	iterator at_rank(uint64_t r) const
	{
		iterator it = end();
		int rc = pmtx_map_seek_rank(tx(), m_, r, &it.c_);
		it.step(rc);
		return it;
	}

	/* Fill an empty map from [first, last), pairs (K, V) in strictly
	 * ascending key order (pmtx_map_load; fill: leaves' fill %). */
	template <class It> void load(It first, It last, unsigned fill = 100)
	{
		struct src {
			It cur, end;
			std::string kb, vb;
		} s{first, last, {}, {}};
		auto next = [](void *arg, pmtx_bytes *k, pmtx_bytes *v) -> int {
			auto *sp = static_cast<src *>(arg);
			if (sp->cur == sp->end)
				return 0;
			detail::enc ke = kc::encode(sp->cur->first, sp->kb);
			if (ke.p != sp->kb.data()) /* keep the bytes: cur moves */
				sp->kb.assign(static_cast<const char *>(ke.p), ke.n);
			detail::enc ve = vc::encode(sp->cur->second, sp->vb);
			if (ve.p != sp->vb.data())
				sp->vb.assign(static_cast<const char *>(ve.p), ve.n);
			*k = pmtx_bytes{sp->kb.data(), sp->kb.size(), 0};
			*v = pmtx_bytes{sp->vb.data(), sp->vb.size(), 0};
			++sp->cur;
			return 1;
		};
		detail::check(pmtx_map_load(tx(), m_, next, &s, fill),
		              "pmtx_map_load");
	}

    private:
	iterator seek_to(int how, const K *k) const
	{
		std::string kb;
		detail::enc e{nullptr, 0};
		if (k)
			e = kc::encode(*k, kb);
		iterator it = end();
		it.step(pmtx_map_seek(tx(), m_, how, e.p, e.n, &it.c_));
		return it;
	}
};

/* ------------------------------------------------------------------------
 * list<T>: pmtx_list, a deque. Indexes may be negative: -1 is the last.
 * ---------------------------------------------------------------------- */
template <class T>
class list : public detail::holder<pmtx_list, detail::list_api> {
	using vc = detail::codec<T>;
	using base = detail::holder<pmtx_list, detail::list_api>;

    public:
	using value_type = T;

	/* Open the list at off (o: pmtx_cont_options, or null). */
	using base::base;

	/* A new list (flags: unused, 0). */
	static pmtx_off create(region &r, unsigned flags = 0)
	{
		return make(r, flags);
	}

	uint64_t size() const
	{
		uint64_t n = 0;
		detail::check(pmtx_list_len(tx(), m_, &n), "pmtx_list_len");
		return n;
	}
	bool empty() const { return size() == 0; }
	void push_back(const T &v) { push(PMTX_LIST_TAIL, v); }
	void push_front(const T &v) { push(PMTX_LIST_HEAD, v); }
	/* Remove and return the element at that end (nullopt: empty). */
	std::optional<T> pop_back() { return pop(PMTX_LIST_TAIL); }
	std::optional<T> pop_front() { return pop(PMTX_LIST_HEAD); }
	/* The element at i (nullopt outside the list). */
	std::optional<T> get(int64_t i) const
	{
		pmtx_bytes v;
		int rc = pmtx_list_index(tx(), m_, i, &v);
		if (rc == PMTX_E_NOT_FOUND)
			return std::nullopt;
		detail::check(rc, "pmtx_list_index");
		return vc::decode(v);
	}
	/* The element at i: PMTX_E_NOT_FOUND outside the list. */
	T at(int64_t i) const
	{
		std::optional<T> v = get(i);
		if (!v)
			throw error(PMTX_E_NOT_FOUND, "pmtx::list::at");
		return *std::move(v);
	}
	T front() const { return at(0); }
	T back() const { return at(-1); }
	void set(int64_t i, const T &v)
	{
		std::string b;
		detail::enc e = vc::encode(v, b);
		detail::check(pmtx_list_set(tx(), m_, i, e.p, e.n),
		              "pmtx_list_set");
	}
	/* Insert v before (after) the first element equal to pivot: false
	 * if there is none. */
	bool insert_before(const T &pivot, const T &v) { return ins(pivot, v, 0); }
	bool insert_after(const T &pivot, const T &v) { return ins(pivot, v, 1); }
	/* Remove elements equal to v (count as in pmtx_list_remove: > 0
	 * from the head, < 0 from the tail, 0 all); how many. */
	uint64_t remove(const T &v, int64_t count = 0)
	{
		std::string b;
		detail::enc e = vc::encode(v, b);
		uint64_t n = 0;
		detail::check(pmtx_list_remove(tx(), m_, e.p, e.n, count, &n),
		              "pmtx_list_remove");
		return n;
	}
	/* Keep only [start, stop] (inclusive, as LTRIM). */
	void trim(int64_t start, int64_t stop)
	{
		detail::check(pmtx_list_trim(tx(), m_, start, stop),
		              "pmtx_list_trim");
	}
	/* f(const T &) for each element of [start, stop], in order. */
	template <class F>
	void for_each(F &&f, int64_t start = 0, int64_t stop = -1) const
	{
		using Fn = std::remove_reference_t<F>;
		detail::walk<Fn> w{&f, nullptr};
		int rc = pmtx_list_range(tx(), m_, start, stop, element<Fn>, &w);
		if (w.ex)
			std::rethrow_exception(w.ex);
		detail::check(rc, "pmtx_list_range");
	}
	std::vector<T> range(int64_t start = 0, int64_t stop = -1) const
	{
		std::vector<T> out;
		for_each([&](const T &v) { out.push_back(v); }, start, stop);
		return out;
	}

    private:
	template <class F> static int element(const pmtx_bytes *v, void *arg)
	{
		auto *w = static_cast<detail::walk<F> *>(arg);
		try {
			(*w->f)(vc::decode(*v));
			return 0;
		} catch (...) {
			w->ex = std::current_exception();
			return 1;
		}
	}
	void push(int end, const T &v)
	{
		std::string b;
		detail::enc e = vc::encode(v, b);
		detail::check(pmtx_list_push(tx(), m_, end, e.p, e.n),
		              "pmtx_list_push");
	}
	/* pmtx_list_pop copies into a buffer the caller sizes: the length
	 * comes first from pmtx_list_index, in the same transaction, so that
	 * nothing can change between the two. */
	std::optional<T> pop(int end)
	{
		transaction t(r_);
		pmtx_bytes peek;
		int rc = pmtx_list_index(t.get(), m_,
		                         end == PMTX_LIST_HEAD ? 0 : -1, &peek);
		if (rc == PMTX_E_NOT_FOUND) {
			t.commit();
			return std::nullopt;
		}
		detail::check(rc, "pmtx_list_index");
		std::string buf(peek.n, '\0');
		size_t n = 0;
		detail::check(pmtx_list_pop(t.get(), m_, end, buf.data(),
		                            buf.size(), &n),
		              "pmtx_list_pop");
		t.commit();
		return vc::decode(buf.data(), n);
	}
	bool ins(const T &pivot, const T &v, int after)
	{
		std::string pb, vb;
		detail::enc pe = vc::encode(pivot, pb), ve = vc::encode(v, vb);
		int rc = pmtx_list_insert(tx(), m_, pe.p, pe.n, after, ve.p, ve.n);
		if (rc == PMTX_E_NOT_FOUND)
			return false;
		detail::check(rc, "pmtx_list_insert");
		return true;
	}
};

/* ------------------------------------------------------------------------
 * string: a handle on a pmtx_str (16 bytes in the region: up to 15 bytes
 * inline, a longer string in a heap block). Its persistent form is
 * persistent<string>, which holds the pmtx_str itself, or any pmtx_str
 * field. A handle owns nothing: copy it freely.
 * ---------------------------------------------------------------------- */
class string {
    public:
	string(region &r, pmtx_str *s) noexcept : r_(r.get()), s_(s) {}
	string(pmtx_region *r, pmtx_str *s) noexcept : r_(r), s_(s) {}

	size_t size() const
	{
		size_t n = 0;
		detail::check(pmtx_str_len(r_, tx(), s_, &n), "pmtx_str_len");
		return n;
	}
	bool empty() const { return size() == 0; }
	std::string str() const
	{
		pmtx_bytes v;
		detail::check(pmtx_str_get(r_, tx(), s_, &v), "pmtx_str_get");
		return std::string(static_cast<const char *>(v.p), v.n);
	}
	operator std::string() const { return str(); }
	/* Up to n bytes from position at. */
	std::string substr(size_t at, size_t n) const
	{
		std::string out(n, '\0');
		size_t got = 0;
		detail::check(pmtx_str_read(r_, tx(), s_, at, out.data(), n, &got),
		              "pmtx_str_read");
		out.resize(got);
		return out;
	}
	void assign(std::string_view v)
	{
		detail::check(pmtx_str_set(r_, tx(), s_, v.data(), v.size()),
		              "pmtx_str_set");
	}
	void append(std::string_view v)
	{
		detail::check(pmtx_str_append(r_, tx(), s_, v.data(), v.size()),
		              "pmtx_str_append");
	}
	/* Overwrite [at, at + v.size()), growing with zero bytes (SETRANGE). */
	void setrange(size_t at, std::string_view v)
	{
		detail::check(pmtx_str_setrange(r_, tx(), s_, at, v.data(),
		                                v.size()),
		              "pmtx_str_setrange");
	}
	void clear() { detail::check(pmtx_str_clear(r_, tx(), s_), "pmtx_str_clear"); }
	string &operator=(std::string_view v)
	{
		assign(v);
		return *this;
	}
	string &operator+=(std::string_view v)
	{
		append(v);
		return *this;
	}
	pmtx_str *handle() const noexcept { return s_; }

    private:
	pmtx_tx *tx() const noexcept { return detail::tx_in(r_); }
	pmtx_region *r_;
	pmtx_str *s_;
};

/* The persistent form of a string: the 16-byte pmtx_str itself. */
template <> class persistent<string> {
    public:
	string open(region &r) { return string(r, &s_); }
	pmtx_str *get() noexcept { return &s_; }

    private:
	pmtx_str s_;
};

} // namespace pmtx

#endif /* PMTX_HPP */
