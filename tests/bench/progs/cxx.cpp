/*
 * cxx.cpp - many small C++ methods: a vector of particles stepped through a
 * simulation with getters and setters (and the std::vector accessors, which
 * are instrumented too since they are compiled here).
 */
#include <cstdio>
#include <vector>

class Vec2 {
public:
	Vec2(double x = 0, double y = 0) : x_(x), y_(y) {}
	double x() const { return x_; }
	double y() const { return y_; }
	void set(double x, double y) { x_ = x; y_ = y; }
private:
	double x_, y_;
};

class Particle {
public:
	Particle(double x, double y, double vx, double vy) : pos_(x, y), vel_(vx, vy) {}
	const Vec2 &pos() const { return pos_; }
	const Vec2 &vel() const { return vel_; }
	void setPos(const Vec2 &p) { pos_ = p; }
	void setVel(const Vec2 &v) { vel_ = v; }
	void bounce()
	{
		double vx = vel_.x(), vy = vel_.y();
		if (pos_.x() < 0 || pos_.x() > 100) vx = -vx;
		if (pos_.y() < 0 || pos_.y() > 100) vy = -vy;
		vel_.set(vx, vy);
	}
private:
	Vec2 pos_, vel_;
};

class World {
public:
	explicit World(int n)
	{
		for (int i = 0; i < n; i++)
			parts_.emplace_back(i % 100, (i * 7) % 100, (i % 13) - 6.0, (i % 7) - 3.0);
	}
	void step(double dt)
	{
		for (Particle &p : parts_) {
			const Vec2 &q = p.pos();
			const Vec2 &v = p.vel();
			p.setPos(Vec2(q.x() + v.x() * dt, q.y() + v.y() * dt));
			p.bounce();
		}
	}
	double energy() const
	{
		double e = 0;
		for (const Particle &p : parts_)
			e += p.vel().x() * p.vel().x() + p.vel().y() * p.vel().y();
		return e;
	}
private:
	std::vector<Particle> parts_;
};

int main()
{
	World w(1000);
	for (int s = 0; s < 1430; s++)
		w.step(0.01);
	std::printf("cxx: energy %.3f\n", w.energy());
	return 0;
}
