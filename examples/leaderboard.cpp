/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * leaderboard.cpp - examples/leaderboard.c on the C++ header (pmtx.hpp):
 * the same commands, the same output, the same region layout (either
 * program opens the other's file).
 *
 *   ranking  pmtx::map<pmtx::score_key, uint64_t>: (score, player) -> the
 *            sequence number of the update that set it;
 *   players  pmtx::hash_map<std::string, entry>: player -> {score, seq}.
 * An update changes both, and the root's count, in one pmtx::transaction:
 * an exception (or a crash) anywhere in it leaves neither changed.
 *
 *   pmtx-leaderboard-cpp [--path FILE] add PLAYER SCORE | top N |
 *       rank PLAYER | between LO HI | stress COUNT [PLAYERS [SEED]] |
 *       check | dump
 */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "pmtx.hpp"

namespace {

struct entry {
	double score;
	uint64_t seq;
};

struct lb_root {
	pmtx::persistent<pmtx::map<pmtx::score_key, uint64_t>> ranking;
	pmtx::persistent<pmtx::hash_map<std::string, entry>> players;
	pmtx::p<uint64_t> seq; /* updates made so far */
};

const size_t name_max = 64;

/* Shortest of %.15g and %.17g that reads back as the same double (the
 * C program's format, so that both print the same). */
std::string fmt_score(double s)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%.15g", s);
	if (strtod(buf, nullptr) != s)
		snprintf(buf, sizeof buf, "%.17g", s);
	return buf;
}

class leaderboard {
    public:
	explicit leaderboard(const std::string &path)
		: r_(pmtx::region::open_or_create(path, size_t(16) << 20,
		                                  options())),
		  root_(r_.root<lb_root>())
	{
		/* both maps made in one transaction the first time */
		pmtx::transaction::run(r_, [&] {
			ranking_ = root_->ranking.open_or_create(r_);
			players_ = root_->players.open_or_create(r_);
		});
	}

	/* One update: both maps and the count, or nothing. */
	uint64_t set(const std::string &name, double score)
	{
		if (name.size() > name_max || std::isnan(score))
			throw pmtx::error(PMTX_E_INVAL, "add");
		return pmtx::transaction::run(r_, [&] {
			uint64_t seq = root_->seq + 1;
			if (auto old = players_.get(name))
				ranking_.erase({old->score, name});
			ranking_.insert({score, name}, seq);
			players_.insert_or_assign(name, entry{score, seq});
			root_->seq = seq;
			return seq;
		});
	}

	void top(uint64_t count) const
	{
		uint64_t n = ranking_.size();
		for (auto it = ranking_.last(); it != ranking_.end() && count--;
		     --it)
			print(it, n, false);
	}

	void rank(const std::string &name) const
	{
		auto e = players_.get(name);
		if (!e) {
			printf("%s: no score\n", name.c_str());
			return;
		}
		print(ranking_.find({e->score, name}), ranking_.size(), false);
	}

	/* Players with lo <= score <= hi, best first. */
	void between(double lo, double hi) const
	{
		uint64_t n = ranking_.size();
		auto it = std::isinf(hi) && hi > 0
		                  ? ranking_.last()
		                  : ranking_.seek(PMTX_SEEK_LT,
		                                  {std::nextafter(hi, INFINITY), ""});
		for (; it != ranking_.end() && it.key().score >= lo; --it)
			print(it, n, false);
	}

	void dump() const
	{
		uint64_t n = ranking_.size();
		for (auto it = ranking_.last(); it != ranking_.end(); --it)
			print(it, n, true);
	}

	/* The maps agree and the ranks are consistent; the failure, or
	 * an empty string. */
	std::string check() const
	{
		uint64_t n = ranking_.size();
		if (players_.size() != n)
			return "the two maps' counts differ";
		uint64_t i = 0;
		for (auto it = ranking_.begin(); it != ranking_.end(); ++it, ++i) {
			auto [key, seq] = *it;
			if (it.rank() != i)
				return "a cursor's rank is not its position";
			if (ranking_.rank(key) != i)
				return "pmtx_map_rank is not the position";
			if (ranking_.at_rank(i).key() != key)
				return "pmtx_map_seek_rank finds another key";
			auto e = players_.get(key.member);
			if (!e)
				return "a ranked player has no entry";
			if (std::memcmp(&e->score, &key.score, sizeof(double)) ||
			    e->seq != seq)
				return "a ranked player's entry differs";
		}
		if (i != n)
			return "the walk's length is not the count";
		std::string bad;
		uint64_t seen = 0, last = root_->seq;
		players_.for_each([&](const std::string &name, const entry &e) {
			seen++;
			if (bad.empty() && ranking_.get({e.score, name}) != e.seq)
				bad = "a player's score is not in the ranking";
			if (bad.empty() && e.seq > last)
				bad = "a player's update is newer than the root's "
				      "count";
		});
		if (bad.empty() && seen != n)
			bad = "the scan does not return every player once";
		return bad;
	}

	void stress(uint64_t count, unsigned players, uint64_t seed)
	{
		uint64_t s = seed ^ root_->seq; /* a restart draws anew */
		for (uint64_t i = 0; i < count; i++) {
			std::string name = "player-" +
			                   std::to_string(splitmix(s) % players);
			double score =
				double(int64_t(splitmix(s) % 20001) - 10000) / 10;
			uint64_t seq = set(name, score);
			printf("ack %llu %s %s\n", (unsigned long long)seq,
			       name.c_str(), fmt_score(score).c_str());
			fflush(stdout);
		}
	}

	uint64_t updates() const { return root_->seq; }
	uint64_t players() const { return players_.size(); }

    private:
	static pmtx::options options()
	{
		pmtx::options o;
		o.layout = "pmtx-leaderboard";
		o.root_size = sizeof(lb_root);
		o.max_size = size_t(1) << 30;
		return o;
	}
	static uint64_t splitmix(uint64_t &s)
	{
		uint64_t z = (s += 0x9e3779b97f4a7c15ull);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		return z ^ (z >> 31);
	}
	/* "RANK PLAYER SCORE [SEQ]", rank 1 the best. */
	static void print(const pmtx::map<pmtx::score_key, uint64_t>::iterator &it,
	                  uint64_t n, bool with_seq)
	{
		auto [key, seq] = *it;
		printf("%llu %s %s", (unsigned long long)(n - it.rank()),
		       key.member.c_str(), fmt_score(key.score).c_str());
		if (with_seq)
			printf(" %llu", (unsigned long long)seq);
		printf("\n");
	}

	pmtx::region r_;
	lb_root *root_;
	pmtx::map<pmtx::score_key, uint64_t> ranking_;
	pmtx::hash_map<std::string, entry> players_;
};

int usage()
{
	fprintf(stderr,
	        "usage: pmtx-leaderboard-cpp [--path FILE] add PLAYER SCORE | "
	        "top N | rank PLAYER | between LO HI |\n"
	        "       stress COUNT [PLAYERS [SEED]] | check | dump\n");
	return 2;
}

int run(leaderboard &lb, int argc, char **argv)
{
	std::string cmd = argv[0];
	if (cmd == "add" && argc == 3) {
		lb.set(argv[1], strtod(argv[2], nullptr));
		lb.rank(argv[1]);
	} else if (cmd == "top" && argc == 2) {
		lb.top(strtoull(argv[1], nullptr, 10));
	} else if (cmd == "rank" && argc == 2) {
		lb.rank(argv[1]);
	} else if (cmd == "between" && argc == 3) {
		lb.between(strtod(argv[1], nullptr), strtod(argv[2], nullptr));
	} else if (cmd == "stress" && argc >= 2 && argc <= 4) {
		unsigned players = argc > 2 ? (unsigned)atoi(argv[2]) : 100;
		if (players == 0)
			return usage();
		lb.stress(strtoull(argv[1], nullptr, 10), players,
		          argc > 3 ? strtoull(argv[3], nullptr, 10) : 1);
	} else if (cmd == "check" && argc == 1) {
		std::string bad = lb.check();
		if (!bad.empty()) {
			printf("FAIL: %s\n", bad.c_str());
			return 1;
		}
		printf("ok %llu players, %llu updates\n",
		       (unsigned long long)lb.players(),
		       (unsigned long long)lb.updates());
	} else if (cmd == "dump" && argc == 1) {
		lb.dump();
	} else {
		return usage();
	}
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	std::string path = "leaderboard.pmtx";
	int a = 1;
	if (a + 1 < argc && !strcmp(argv[a], "--path")) {
		path = argv[a + 1];
		a += 2;
	}
	if (a >= argc)
		return usage();
	try {
		leaderboard lb(path);
		return run(lb, argc - a, argv + a);
	} catch (std::exception &e) {
		fprintf(stderr, "pmtx-leaderboard-cpp: %s\n", e.what());
		return 1;
	}
}
